package fleetsim

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
)

// shardResult is what a shard leaves behind once its machines are dropped.
type shardResult struct {
	stats   Stats
	summary lifecycle.Summary
	ttr     []time.Duration
	viol    []Violation
	nviol   int
}

// Run simulates the fleet the options describe and checks it. The error
// is only for invalid options; broken promises are in the Result.
//
// The shards run on Options.Workers goroutines; only the shards being run
// are in memory. The result depends on the seed and the shard count only.
func Run(o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.Shards = o.shards()
	// The outage is one event of the whole fleet: its time comes from the
	// seed, not from a shard's stream.
	master := rand.New(rand.NewPCG(o.Seed, 0))
	outageAt := epoch
	if o.Faults && o.Outage > 0 {
		lo, hi := int64(o.Ramp), int64(o.Active-o.Outage)
		if hi < lo {
			lo = 0
		}
		outageAt += lo + master.Int64N(hi-lo+1)
	}
	t, err := newTables(&o, outageAt)
	if err != nil {
		return nil, err
	}
	// So is the zone outage, and the zone it takes down.
	if o.Faults && o.ZoneOutage > 0 {
		lo, hi := int64(o.Ramp), int64(o.Active-o.ZoneOutage)
		if hi < lo {
			lo = 0
		}
		t.zoneOutageAt = epoch + lo + master.Int64N(hi-lo+1)
		t.outageZone = uint8(1 + master.IntN(o.Zones))
	}
	results := make([]shardResult, o.Shards)
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, o.Shards) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= o.Shards {
					return
				}
				w := newShard(&o, t, i, nil)
				w.run()
				results[i] = shardResult{stats: w.stats, summary: w.summary, ttr: w.ttr, viol: w.viol, nviol: w.nviol}
			}
		})
	}
	wg.Wait()

	r := &Result{Options: o, OutageAt: time.Duration(outageAt - epoch),
		ZoneOutageAt: time.Duration(t.zoneOutageAt - epoch), OutageZone: zoneName(t.outageZone)}
	r.Stats.init()
	var ttr []time.Duration
	for i := range results {
		sr := &results[i]
		r.Stats.add(&sr.stats)
		mergeSummary(&r.Summary, &sr.summary)
		ttr = append(ttr, sr.ttr...)
		r.Violations = append(r.Violations, sr.viol...)
		r.ViolationCount += sr.nviol
		results[i] = shardResult{}
	}
	r.TimeToRunning = percentiles(ttr)
	r.Traces = traces(&o, t, r.Violations)
	return r, nil
}

// traces replays the shards of the first machines with violations and
// returns their traces.
func traces(o *Options, t *tables, viol []Violation) []Trace {
	var out []Trace
	var seen []Violation
	for _, v := range viol {
		if len(out) >= o.Traces {
			break
		}
		if v.index < 0 || slices.ContainsFunc(seen, func(s Violation) bool { return s.Shard == v.Shard && s.index == v.index }) {
			continue
		}
		seen = append(seen, v)
		tr := newTracer(v, o.TraceLen)
		w := newShard(o, t, v.Shard, tr)
		w.run()
		out = append(out, Trace{Violation: v, Lines: tr.lines()})
	}
	return out
}

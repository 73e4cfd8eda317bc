package lifecycle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/phase"
)

// Tests of Orphans' joins (orphans.go, pidjoin.go) against the rule of its
// doc comment written the plain way, over fleets built from inputs.

// orphansNow is when the orphan tests collect.
var orphansNow = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// plainOrphans is Orphans' documented rule over the machines' inputs: a set
// of the providerIDs the machines record and an index of the machines by
// name, the last of a name winning.
func plainOrphans(cfg *Config, now time.Time, machines []Input, instances []driverapi.Instance) []driverapi.Call {
	recorded := map[string]bool{}
	byName := map[string]*Input{}
	pidOf := func(in *Input) string {
		if in.Status.ProviderID != "" {
			return in.Status.ProviderID
		}
		return in.Object.ProviderID
	}
	for i := range machines {
		if pid := pidOf(&machines[i]); pid != "" {
			recorded[pid] = true
		}
		byName[machines[i].Object.Name] = &machines[i]
	}
	var out []driverapi.Call
	for _, inst := range instances {
		if inst.ProviderID == "" || recorded[inst.ProviderID] {
			continue
		}
		if in := byName[inst.MachineName]; in != nil {
			st := &in.Status
			creating := st.Phase == phase.None || st.Phase == phase.CrashLoopBackOff ||
				st.Stage == StageCreating || st.Stage == StageInitializing
			if (creating || pidOf(in) == "") && (inst.OwnerUID == "" || inst.OwnerUID == in.Object.UID) {
				continue
			}
		}
		if !inst.Created.IsZero() && now.Sub(inst.Created) <= cfg.CreationTimeout {
			continue
		}
		out = append(out, driverapi.Call{Method: driverapi.MethodDelete,
			Machine: driverapi.MachineRef{Name: inst.MachineName, UID: inst.OwnerUID, ProviderID: inst.ProviderID}})
	}
	return out
}

// orphanPIDs are the providerIDs the tests draw from: none, short ones,
// ones that are what others are after a common prefix, ones that differ
// only in their last byte, and ones longer than a chunk of the join's
// records or a good part of one, so that partitions span chunks.
var orphanPIDs = func() []string {
	pids := []string{"", "p", "p-1", "p-2", "p-10", "1", "0", "-1", "aws:///eu-west-1a/i-0000000000000001",
		"aws:///eu-west-1a/i-0000000000000002", "aws:///eu-west-1b/i-0000000000000001"}
	for _, n := range []int{5000, 7000, pidChunk, pidChunk + 1} {
		for _, last := range "ab" {
			pids = append(pids, strings.Repeat("x", n-1)+string(last))
		}
	}
	return pids
}()

// orphanMasks are the hash masks the tests join with: whole hashes; none
// (every providerID and name hashes alike); only a few bits, among them the
// top ones that choose a partition; only the top bits; only bits below the
// keys.
var orphanMasks = []uint64{^uint64(0), 0, 0xc000_0001_0000_0003, 0xff00_0000_0000_0000, 0x0000_0000_ffff_ffff}

// Orphans agrees with the plain rule, and so does its join whatever its
// shape: hashes that collide (down to all alike, so that only the
// comparison of the bytes tells providerIDs apart), partitions of one
// providerID or of all, records longer than a chunk. The fleets' names,
// UIDs and providerIDs collide often; the machines are built from inputs.
func TestPropertyOrphansJoinShapes(t *testing.T) {
	cfg := DefaultConfig()
	names := rapid.SampledFrom([]string{"", "m-1", "m-2", "m-3", "m-4", "m-10", strings.Repeat("m", 40)})
	uids := rapid.SampledFrom([]string{"", "u-1", "u-2", "u-3"})
	pids := rapid.SampledFrom(orphanPIDs)
	phases := rapid.SampledFrom([]phase.Phase{phase.None, phase.Pending, phase.Running, phase.CrashLoopBackOff,
		phase.Failed, phase.Terminating, phase.Unknown})
	stages := rapid.SampledFrom([]Stage{StageNone, StageCreating, StageInitializing, StageDrain})
	rapid.Check(t, func(t *rapid.T) {
		machines := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Input {
			var in Input
			in.Object.Name, in.Object.UID = names.Draw(t, "name"), uids.Draw(t, "uid")
			in.Object.ProviderID, in.Status.ProviderID = pids.Draw(t, "object pid"), pids.Draw(t, "status pid")
			in.Status.Phase, in.Status.Stage = phases.Draw(t, "phase"), stages.Draw(t, "stage")
			return in
		}), 0, 24).Draw(t, "machines")
		instances := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) driverapi.Instance {
			age := time.Duration(rapid.IntRange(0, 60).Draw(t, "age minutes")) * time.Minute
			created := orphansNow.Add(-age)
			if rapid.Bool().Draw(t, "no creation time") {
				created = time.Time{}
			}
			return driverapi.Instance{ProviderID: pids.Draw(t, "pid"), MachineName: names.Draw(t, "name"),
				OwnerUID: uids.Draw(t, "owner"), Created: created}
		}), 0, 24).Draw(t, "instances")
		shape := joinShape{mask: rapid.SampledFrom(orphanMasks).Draw(t, "mask"),
			perPartition: rapid.SampledFrom([]int{1, 2, 3, 7, pidsPerPartition}).Draw(t, "per partition")}
		fleet := make([]Member, len(machines))
		for i := range machines {
			fleet[i] = MemberOf(&cfg, &machines[i])
		}
		want := plainOrphans(&cfg, orphansNow, machines, instances)
		sameCalls(t, "Orphans", Orphans(nil, &cfg, orphansNow, fleet, instances), want)
		dst := make([]driverapi.Call, rapid.IntRange(0, 3).Draw(t, "dst length"))
		sameCalls(t, fmt.Sprintf("the join of shape %+v", shape), orphans(dst, &cfg, orphansNow, fleet, instances, shape), want)
	})
}

// sameCalls fails t unless got, the calls of what, are want.
func sameCalls(t *rapid.T, what string, got, want []driverapi.Call) {
	if len(got) != len(want) {
		t.Fatalf("%s: %d calls, the plain rule %d:\n%v\n%v", what, len(got), len(want), got, want)
	}
	for i := range got {
		if got[i].Method != want[i].Method || got[i].Machine != want[i].Machine {
			t.Fatalf("%s: call %d is %+v, the plain rule's %+v", what, i, got[i], want[i])
		}
	}
}

// A providerID whose hash equals a recorded one's, down to every bit, is
// still an orphan: the join compares the bytes.
func TestOrphansCollidingHashes(t *testing.T) {
	cfg := DefaultConfig()
	old := orphansNow.Add(-time.Hour)
	var machines []Input
	var instances []driverapi.Instance
	for i := range 50 {
		var in Input
		in.Object.Name, in.Object.UID = fmt.Sprintf("m-%d", i), fmt.Sprintf("u-%d", i)
		in.Status.Phase, in.Status.ProviderID = phase.Running, fmt.Sprintf("p-%d", i)
		machines = append(machines, in)
		instances = append(instances, driverapi.Instance{ProviderID: in.Status.ProviderID, MachineName: in.Object.Name,
			OwnerUID: in.Object.UID, Created: old})
	}
	instances = append(instances, driverapi.Instance{ProviderID: "p-50", MachineName: "gone", OwnerUID: "u-gone", Created: old})
	fleet := make([]Member, len(machines))
	for i := range machines {
		fleet[i] = MemberOf(&cfg, &machines[i])
	}
	for _, shape := range []joinShape{{mask: 0, perPartition: 1}, {mask: 0, perPartition: pidsPerPartition}} {
		got := orphans(nil, &cfg, orphansNow, fleet, instances, shape)
		if len(got) != 1 || got[0].Machine.ProviderID != "p-50" {
			t.Errorf("%+v: %v, want the one unrecorded instance p-50", shape, got)
		}
	}
}

// The hash spreads providerIDs that differ in one byte over the partitions
// and the slots: of a thousand of them, no top byte and no byte below it
// is shared by more than a few dozen.
func TestHashStringSpreads(t *testing.T) {
	for _, format := range []string{"aws:///eu-west-1a/i-%017x", "p-%d", "%d", strings.Repeat("x", 100) + "%d"} {
		var top, next [256]int
		for i := range 1000 {
			h := hashString(fmt.Sprintf(format, i))
			top[h>>56]++
			next[h>>48&0xff]++
		}
		for b := range 256 {
			if top[b] > 20 || next[b] > 20 {
				t.Errorf("%q: %d hashes with top byte %#x, %d with next byte %#x", format, top[b], b, next[b], b)
			}
		}
	}
}

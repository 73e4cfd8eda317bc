package lifecycle

import (
	"math/bits"
	"time"

	"github.com/purelifecycle/machine/driverapi"
)

// Orphans returns a DeleteMachine call for every instance of the provider that
// no machine owns (MCM's orphan-VM collection). An instance is left alone when
// a machine records its providerID; when a machine of its name is still being
// created (no phase, CrashLoopBackOff, a creation stage), or records no
// instance yet, and the instance is that incarnation's or names no owner (MCM
// issue 583,
// https://github.com/gardener/machine-controller-manager/issues/583); and when
// it is younger than the creation timeout, as it may belong to a creation or a
// newer incarnation the shell's caches do not show yet. Otherwise an instance
// of no known machine, of another incarnation (another owner UID), or a second
// instance of a machine that recorded another one, is an orphan. dst is reused
// when its capacity suffices; the order follows instances. Linear in machines
// plus instances, in time and in memory: it reads each once and joins their
// providerIDs a cache-sized partition at a time (pidjoin.go); it allocates a
// few times, and once more per 4 MiB of providerIDs.
func Orphans(dst []driverapi.Call, cfg *Config, now time.Time, fleet []Member, instances []driverapi.Instance) []driverapi.Call {
	return orphans(dst, cfg, now, fleet, instances, joinShape{mask: ^uint64(0), perPartition: pidsPerPartition})
}

// pidsPerPartition is about how many providerIDs of a side Orphans' join
// puts in a partition: their records and table stay in a core's caches.
const pidsPerPartition = 4096

// orphans is Orphans with the shape of its joins given.
func orphans(dst []driverapi.Call, cfg *Config, now time.Time, fleet []Member, instances []driverapi.Instance, shape joinShape) []driverapi.Call {
	dst = dst[:0]
	// The instances no machine records: normally a few (orphans and
	// creations in flight).
	loose, nameKeys := unrecordedInstances(fleet, instances, shape)
	if len(loose) == 0 {
		return dst
	}
	namesake := namesakes(fleet, nameKeys, instances, loose, shape.mask)
	n := StampOf(now)
	for j, i := range loose {
		inst := &instances[i]
		if k := namesake[j]; k >= 0 {
			m := &fleet[k]
			if (m.instanceInFlight() || m.providerID == "") && (inst.OwnerUID == "" || inst.OwnerUID == m.uid) {
				// In flight, or to be adopted by a machine that records no
				// instance yet.
				continue
			}
		}
		if c := StampOf(inst.Created); c != 0 && n.Sub(c) <= cfg.CreationTimeout {
			continue
		}
		dst = append(dst, driverapi.Call{Method: driverapi.MethodDelete,
			Machine: driverapi.MachineRef{Name: inst.MachineName, UID: inst.OwnerUID, ProviderID: inst.ProviderID}})
	}
	return dst
}

// namesakes returns, for each instance of loose, the index in the fleet of
// the last machine of the instance's name, or -1 if there is none;
// nameKeys are the keys of the machines' names (nameKey). It indexes only
// the names of loose, normally a few, in a table that stays small where one
// of the whole fleet would not, and compares a machine's name only when its
// key is one of theirs.
func namesakes(fleet []Member, nameKeys []uint32, instances []driverapi.Instance, loose []int, mask uint64) []int {
	size := tableSize(len(loose))
	shift := max(32-bits.Len(uint(size-1)), 0)
	buf := make([]int, size+3*len(loose))
	// table's slots hold 1 + the entry of a name; an entry is the first
	// loose instance of a name, its key and its machine.
	table, keys := buf[:size], make([]uint32, len(loose))
	entry, machine := buf[size:size+len(loose)], buf[size+len(loose):size+2*len(loose)]
	for e, i := range loose {
		name := instances[i].MachineName
		key := nameKey(name, mask)
		j := int(key >> shift)
		for ; table[j] != 0; j = (j + 1) & (size - 1) {
			if f := table[j] - 1; keys[f] == key && instances[loose[f]].MachineName == name {
				break
			}
		}
		if table[j] == 0 {
			table[j], keys[e], machine[e] = e+1, key, -1
		}
		entry[e] = table[j] - 1
	}
	for k, key := range nameKeys {
		// The machine's name is read only when its key is a loose
		// instance's: a pass over the keys does not touch the fleet.
		for j := int(key >> shift); table[j] != 0; j = (j + 1) & (size - 1) {
			if e := table[j] - 1; keys[e] == key && instances[loose[e]].MachineName == fleet[k].name {
				machine[e] = k
				break
			}
		}
	}
	out := buf[size+2*len(loose):]
	for e := range loose {
		out[e] = machine[entry[e]]
	}
	return out
}

package lifecycle

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/purelifecycle/machine/driverapi"
)

// The providerID join of Orphans: which instances' providerIDs no machine
// records. A set of a million strings does not fit in a core's caches, and
// every lookup in it would miss them; a fleet that large is read at the
// speed of memory, so it is read once. Each side is hashed once and its
// providerIDs are copied, bytes and hash together, into partitions chosen by
// the top bits of their hashes, a few thousand providerIDs each; each
// partition is then joined with a small table that stays in cache. Equal
// hashes are confirmed by comparing the bytes, so a collision never makes an
// orphan look recorded. The hash has no seed: the providerIDs come from the
// provider, and ones made to collide would only lengthen the probes of
// their partition, never change the answer.
//
// ProviderIDs share long prefixes (a provider's scheme, a region, a
// subscription), so the join drops the longest prefix common to a sample of
// the machines' providerIDs from every providerID of both sides that starts
// with it, and marks those it dropped it from: two providerIDs are equal
// when their marks and the rest are. What is left of a providerID is its
// tail: the mark (1 byte: 1 when the prefix was dropped, else 0) and the
// rest.
//
// A side's records are written in chunks, each of one partition, as they
// come; a partition's chunks are chained. A record is a providerID's key
// (the 32 bits of the tail's hash below those that chose the partition; 4
// bytes, little-endian), for an instance its index (a uvarint), the tail's
// length (a uvarint) and the tail.

// joinShape tunes Orphans' joins: hashes keep only the bits of mask, and a
// partition holds about perPartition providerIDs of the larger side. Tests
// narrow the mask to make hashes collide, and the partitions to make many.
type joinShape struct {
	mask         uint64
	perPartition int
}

const (
	// pidChunk is the size of a chunk of records; a record longer than
	// that has a chunk of its own.
	pidChunk = 16 << 10
	// pidSlab is the most a side allocates at once for its chunks.
	pidSlab = 4 << 20
)

// pidChunks is one side of the join.
type pidChunks struct {
	// slabs are the memory chunks are cut from; free is where the next
	// chunk starts in the last one, slabSize the size of the next one (it
	// doubles, up to pidSlab, when a guess falls short).
	slabs    [][]byte
	free     int
	slabSize int
	// chunks are the closed chunks.
	chunks []pidChunkOf
	// open[p] is the chunk partition p fills; last[p] its last closed
	// chunk (-1 if none); keys[p] its number of records.
	open       []pidOpen
	last, keys []int
	top        int
	indexed    bool // records hold the instance's index
}

// pidChunkOf is a closed chunk: its records, slabs[slab][lo:hi], and the
// partition's chunk closed before it (-1 if none).
type pidChunkOf struct{ slab, lo, hi, before int }

// pidOpen is the chunk a partition fills, slabs[slab][lo:end], records
// up to off.
type pidOpen struct{ slab, lo, off, end int }

// newPIDChunks returns an empty side of 2^top partitions for n
// providerIDs whose tails are about avg bytes long.
func newPIDChunks(top, n, avg int, indexed bool) pidChunks {
	parts := 1 << top
	c := make([]int, 2*parts)
	s := pidChunks{open: make([]pidOpen, parts), last: c[:parts], keys: c[parts:], top: top, indexed: indexed}
	for p := range s.last {
		s.last[p] = -1
	}
	// The records, a sixteenth more for a guess short of the mark, and
	// the room left in the last chunk of each partition but one (whose
	// chunks take the rest of the slab), half of one.
	record := 4 + uvarintLen(uint64(avg)) + avg
	if indexed {
		record += uvarintLen(uint64(n))
	}
	estimate := n*record + n*record/16 + (parts-1)*pidChunk/2
	s.slabSize = max(min(estimate, pidSlab), 1)
	s.chunks = make([]pidChunkOf, 0, estimate/pidChunk+parts)
	return s
}

// pidSamples is how many providerIDs of a side the join samples for their
// common prefix and the length of their tails.
const pidSamples = 32

// commonPrefix returns the longest prefix common to the providerIDs (but
// "") of a few elements, evenly spaced, of n: pid(i) is the i-th one.
func commonPrefix(n int, pid func(i int) string) string {
	var prefix string
	first := true
	for i := 0; i < n; i += max(n/pidSamples, 1) {
		p := pid(i)
		if p == "" {
			continue
		}
		if first {
			prefix, first = p, false
			continue
		}
		k := 0
		for k < len(prefix) && k < len(p) && prefix[k] == p[k] {
			k++
		}
		prefix = prefix[:k]
	}
	return prefix
}

// averageTail returns the average length of the tails of the providerIDs
// of a few elements, evenly spaced, of n, after prefix: pid(i) is the i-th
// one.
func averageTail(n int, pid func(i int) string, prefix string) int {
	total, k := 0, 0
	for i := 0; i < n; i += max(n/pidSamples, 1) {
		_, rest := tail(pid(i), prefix)
		total, k = total+1+len(rest), k+1
	}
	return total / max(k, 1)
}

// tail returns the mark and the rest of providerID pid after prefix: 1 and
// what follows the prefix when pid starts with it, else 0 and pid.
func tail(pid, prefix string) (mark byte, rest string) {
	if len(pid) >= len(prefix) && pid[:len(prefix)] == prefix {
		return 1, pid[len(prefix):]
	}
	return 0, pid
}

// hashTail returns the hash of a providerID's tail.
func hashTail(mark byte, rest string) uint64 {
	return hashString(rest) ^ uint64(mark)
}

// add writes the record of the providerID of tail mark and rest, hash h, of
// index i.
func (s *pidChunks) add(h uint64, i int, mark byte, rest string) {
	p := partition(h, s.top)
	size := 4 + uvarintLen(uint64(1+len(rest))) + 1 + len(rest)
	if s.indexed {
		size += uvarintLen(uint64(i))
	}
	o := &s.open[p]
	if o.end-o.off < size {
		s.refill(p, size)
	}
	b := s.slabs[o.slab][o.off:o.end]
	binary.LittleEndian.PutUint32(b, uint32(h<<s.top>>32))
	w := 4
	if s.indexed {
		w += binary.PutUvarint(b[w:], uint64(i))
	}
	w += binary.PutUvarint(b[w:], uint64(1+len(rest)))
	b[w] = mark
	copy(b[w+1:], rest)
	o.off += size
	s.keys[p]++
}

// refill closes partition p's open chunk and opens one with room for size
// bytes at least: pidChunk bytes, or what is left of the slab if less, or
// size if more.
func (s *pidChunks) refill(p, size int) {
	s.close(p)
	left := 0
	if len(s.slabs) > 0 {
		left = len(s.slabs[len(s.slabs)-1]) - s.free
	}
	if left < size {
		// A new slab; the little left of the last one stays unused.
		if len(s.slabs) > 0 {
			s.slabSize = min(2*s.slabSize, max(pidSlab, s.slabSize))
		}
		left = max(s.slabSize, size)
		s.slabs = append(s.slabs, make([]byte, left))
		s.free = 0
	}
	n := min(max(pidChunk, size), left)
	s.open[p] = pidOpen{slab: len(s.slabs) - 1, lo: s.free, off: s.free, end: s.free + n}
	s.free += n
}

// close closes partition p's open chunk, if it holds records.
func (s *pidChunks) close(p int) {
	if o := s.open[p]; o.off > o.lo {
		s.chunks = append(s.chunks, pidChunkOf{slab: o.slab, lo: o.lo, hi: o.off, before: s.last[p]})
		s.last[p] = len(s.chunks) - 1
		s.open[p] = pidOpen{}
	}
}

// records returns the records of chunk c.
func (s *pidChunks) records(c int) []byte {
	ch := &s.chunks[c]
	return s.slabs[ch.slab][ch.lo:ch.hi]
}

// record decodes the record at off of records: its key, index and tail,
// and where the next one starts.
func (s *pidChunks) record(records []byte, off int) (key uint32, i int, tail []byte, next int) {
	b := records[off:]
	key = binary.LittleEndian.Uint32(b)
	w := 4
	if s.indexed {
		v, n := binary.Uvarint(b[w:])
		i, w = int(v), w+n
	}
	v, n := binary.Uvarint(b[w:])
	w += n
	return key, i, b[w : w+int(v)], off + w + int(v)
}

// uvarintLen is the length of v as a uvarint.
func uvarintLen(v uint64) int {
	return (bits.Len64(v|1) + 6) / 7
}

// partition returns the partition of hash h: its top bits, top of them.
func partition(h uint64, top int) int {
	if top == 0 {
		return 0
	}
	return int(h >> (64 - top))
}

// tableSize returns the size of an open-addressing table for n keys: the
// least power of two at least twice n (and 2), so probes stay short.
func tableSize(n int) int {
	return 1 << bits.Len(uint(2*max(n, 1)-1))
}

// unrecordedInstances returns the indices, in order, of the instances with
// a providerID that no machine of the fleet records, and the keys of the
// machines' names (nameKey). It reads the fleet and the instances once.
func unrecordedInstances(fleet []Member, instances []driverapi.Instance, shape joinShape) (loose []int, nameKeys []uint32) {
	// top is the number of the hash's top bits that choose a partition.
	top := 0
	if most := max(len(fleet), len(instances)); most > shape.perPartition {
		top = bits.Len(uint((most - 1) / max(shape.perPartition, 1)))
	}
	machinePID := func(i int) string { return fleet[i].providerID }
	instancePID := func(i int) string { return instances[i].ProviderID }
	prefix := commonPrefix(len(fleet), machinePID)
	nameKeys = make([]uint32, len(fleet))
	ms := newPIDChunks(top, len(fleet), averageTail(len(fleet), machinePID, prefix), false)
	for i := range fleet {
		m := &fleet[i]
		nameKeys[i] = nameKey(m.name, shape.mask)
		if m.providerID != "" {
			mark, rest := tail(m.providerID, prefix)
			ms.add(hashTail(mark, rest)&shape.mask, i, mark, rest)
		}
	}
	set := make([]uint64, (len(instances)+63)/64)
	is := newPIDChunks(top, len(instances), averageTail(len(instances), instancePID, prefix), true)
	for i := range instances {
		if pid := instances[i].ProviderID; pid != "" {
			mark, rest := tail(pid, prefix)
			is.add(hashTail(mark, rest)&shape.mask, i, mark, rest)
			set[i>>6] |= 1 << (i & 63)
		}
	}
	joinPartitions(&ms, &is, set)
	n := 0
	for _, w := range set {
		n += bits.OnesCount64(w)
	}
	loose = make([]int, 0, n)
	for w, word := range set {
		for ; word != 0; word &= word - 1 {
			loose = append(loose, w<<6|bits.TrailingZeros64(word))
		}
	}
	return loose, nameKeys
}

// nameKey returns the top 32 bits of the hash of a machine's name, masked.
func nameKey(name string, mask uint64) uint32 {
	return uint32((hashString(name) & mask) >> 32)
}

// joinPartitions removes from the set of instances (a bit each) every
// instance whose providerID a machine records, a partition at a time: the
// machines' records of the partition go into an open-addressing table, by
// the hash's bits below the partition's, which the instances' records of the
// same partition probe.
func joinPartitions(ms, is *pidChunks, set []uint64) {
	for p := range ms.open {
		ms.close(p)
		is.close(p)
	}
	table := make([]pidSlot, tableSize(slices.Max(ms.keys)))
	for p, keys := range ms.keys {
		if keys == 0 || is.keys[p] == 0 {
			continue
		}
		t := table[:tableSize(keys)]
		clear(t)
		// The slot is the key's top bits (all of it in a table of more
		// than 2^32 slots).
		shift := max(32-bits.Len(uint(len(t)-1)), 0)
		slot := func(key uint32) int { return int(key >> shift) }
		for c := ms.last[p]; c >= 0; c = ms.chunks[c].before {
			records := ms.records(c)
			for off := 0; off < len(records); {
				key, _, _, next := ms.record(records, off)
				j := slot(key)
				for t[j].chunk != 0 {
					j = (j + 1) & (len(t) - 1)
				}
				t[j] = pidSlot{key: key, chunk: uint32(c) + 1, off: uint32(off)}
				off = next
			}
		}
		for c := is.last[p]; c >= 0; c = is.chunks[c].before {
			records := is.records(c)
			for off := 0; off < len(records); {
				key, i, itail, next := is.record(records, off)
				for j := slot(key); t[j].chunk != 0; j = (j + 1) & (len(t) - 1) {
					if t[j].key != key {
						continue
					}
					if _, _, mtail, _ := ms.record(ms.records(int(t[j].chunk-1)), int(t[j].off)); bytes.Equal(mtail, itail) {
						set[i>>6] &^= 1 << (i & 63)
						break
					}
				}
				off = next
			}
		}
	}
}

// pidSlot is a slot of the join's table: a machine's record's key, 1 + its
// chunk (0 in an empty slot) and its offset in the chunk. Both fit in 32
// bits: the machines' side has no more chunks than records, one a machine
// (a Member takes over a hundred bytes, so fewer than 2^32 fit in memory),
// and an offset is below pidChunk, or 0 in a chunk of one long record.
type pidSlot struct{ key, chunk, off uint32 }

// hashString hashes s sixteen bytes at a time: each step multiplies two
// words, mixed with the state and with constants (the fractional digits of
// pi), to 128 bits and folds the halves together. The top bits, which
// choose a partition, and the bits below them, which choose a slot, depend
// on every byte.
func hashString(s string) uint64 {
	const (
		k0 = 0x243f6a8885a308d3
		k1 = 0x13198a2e03707344
		k2 = 0xa4093822299f31d0
		k3 = 0x082efa98ec4e6c89
	)
	h := uint64(len(s)) ^ k0
	for ; len(s) > 16; s = s[16:] {
		h = fold(word64(s)^k1, word64(s[8:])^h)
	}
	var a, b uint64
	switch n := len(s); {
	case n >= 8:
		a, b = word64(s), word64(s[n-8:])
	case n >= 4:
		a, b = uint64(word32(s)), uint64(word32(s[n-4:]))
	case n > 0:
		a, b = uint64(s[0])<<16|uint64(s[n/2])<<8|uint64(s[n-1]), 0
	}
	h = fold(a^k2, b^h)
	return fold(h^k3, k1)
}

// fold multiplies a and b to 128 bits and returns the halves xored.
func fold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

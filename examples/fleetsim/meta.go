package fleetsim

// Instance metadata is drawn from a small vocabulary: three keys with three
// values each. A set of key values is a metaCode, two bits per key (0:
// absent, 1..3: the value). The desired metadata of every machine is one
// of 64 maps built once per run and shared read-only: the lifecycle never
// writes a map it is given, and the provider keeps the map a CreateMachine
// gives it until an UpdateMetadata changes the instance's metadata (then
// the instance has a map of its own).

const metaKeyCount = 3

// metaKey returns the k-th key.
func metaKey(k int) string {
	switch k {
	case 0:
		return "team"
	case 1:
		return "env"
	}
	return "cost-center"
}

// metaValues are the values of each key; never written.
var metaValues = [metaKeyCount][3]string{
	{"alpha", "beta", "gamma"},
	{"prod", "staging", "dev"},
	{"cc-1", "cc-2", "cc-3"},
}

// metaValue returns the j-th value (0..2) of key k.
func metaValue(k, j int) string { return metaValues[k][j] }

// metaCode is a set of key values: digit k (two bits) is 0 when key k is
// absent, else 1 + the index of its value.
type metaCode uint8

func (c metaCode) digit(k int) int { return int(c>>(2*k)) & 3 }

func (c metaCode) with(k, digit int) metaCode {
	return c&^(3<<(2*k)) | metaCode(digit)<<(2*k)
}

// metaVersion returns the desired metadata of version v: machines start at
// version 0 and a metadata change moves them to the next one, which changes
// a value, adds a key, or removes one.
func metaVersion(v uint8) metaCode {
	switch v % 4 {
	case 0: // team=alpha env=prod
		return metaCode(0).with(0, 1).with(1, 1)
	case 1: // team=beta env=prod cost-center=cc-1
		return metaCode(0).with(0, 2).with(1, 1).with(2, 1)
	case 2: // team=beta cost-center=cc-2
		return metaCode(0).with(0, 2).with(2, 2)
	}
	// team=gamma env=staging cost-center=cc-2
	return metaCode(0).with(0, 3).with(1, 2).with(2, 2)
}

// metaTable holds the map of every metaCode (nil for the empty set).
type metaTable struct {
	maps [64]map[string]string
}

func newMetaTable() *metaTable {
	t := &metaTable{}
	for c := range 64 {
		code := metaCode(c)
		if code == 0 {
			continue
		}
		m := make(map[string]string, metaKeyCount)
		for k := range metaKeyCount {
			if d := code.digit(k); d > 0 {
				m[metaKey(k)] = metaValue(k, d-1)
			}
		}
		t.maps[c] = m
	}
	return t
}

// of returns the shared map of code.
func (t *metaTable) of(code metaCode) map[string]string { return t.maps[code&63] }

// codeOf returns the code of a map, and false when it holds a key or value
// outside the vocabulary.
func codeOf(m map[string]string) (metaCode, bool) {
	var c metaCode
	n := 0
	for k := range metaKeyCount {
		v, ok := m[metaKey(k)]
		if !ok {
			continue
		}
		j := valueIndex(k, v)
		if j < 0 {
			return 0, false
		}
		c = c.with(k, j+1)
		n++
	}
	return c, n == len(m)
}

// valueIndex returns the index of value v of key k, -1 when it is not one.
func valueIndex(k int, v string) int {
	for j := range 3 {
		if metaValue(k, j) == v {
			return j
		}
	}
	return -1
}

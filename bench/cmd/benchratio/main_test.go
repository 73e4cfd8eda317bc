package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
cpu: AMD EPYC
BenchmarkReuse/impl=lifecycle-2         	 1641444	       200 ns/op	       0 B/op	       0 allocs/op
BenchmarkReuse/impl=lifecycle-2         	 1641444	       100 ns/op	       0 B/op	       0 allocs/op
BenchmarkReuse/impl=lifecycle-2         	 1641444	       300 ns/op	       0 B/op	       0 allocs/op
BenchmarkReuse/impl=pure-into-zeroing-2 	 5659144	        60 ns/op	       0 B/op	       0 allocs/op
BenchmarkReuse/impl=looplab-2           	  927319	       900 ns/op	     289 B/op	       5 allocs/op
BenchmarkSim/impl=lifecycle-2           	      10	  31610806 ns/op	       316.1 ns/machine-step	       0 B/op	       0 allocs/op
BenchmarkFlow/path=create/impl=lifecycle-2 	 100	  1795 ns/op	 299 ns/step	 0 B/op	 0 allocs/op
BenchmarkLimit/machines=10000-2         	     320	    630998 ns/op	        63.10 ns/machine	   33448 B/op	     118 allocs/op
`

func TestParseSplitsBenchImplAndProcs(t *testing.T) {
	res := &results{samples: map[key][]float64{}, impls: map[string][]string{}}
	require.NoError(t, parse(strings.NewReader(sample), res))
	require.Equal(t, []string{"Reuse", "Sim", "Flow/path=create", "Limit/machines=10000"}, res.benches)
	require.Equal(t, []string{"lifecycle", "pure-into-zeroing", "looplab"}, res.impls["Reuse"])
	require.Equal(t, 200.0, res.med("Reuse", "lifecycle", "ns/op"))
	require.Equal(t, 316.1, res.med("Sim", "lifecycle", "ns/machine-step"))
	require.Equal(t, 299.0, res.med("Flow/path=create", "lifecycle", "ns/step"))
	require.Equal(t, 63.1, res.med("Limit/machines=10000", "", "ns/machine"))
	require.Equal(t, []string{"goos: linux", "cpu: AMD EPYC"}, res.header)

	var out strings.Builder
	res.ratios(&out)
	require.Contains(t, out.String(), "| faster than looplab, per transition (info: by value) | Reuse: looplab ÷ lifecycle | 4.500× | ≥ 4.00× | met |")
	require.NotContains(t, out.String(), "lifecycle-into", "no ratio of an impl the run lacks")
}

func TestMedianOfEvenCountIsTheMean(t *testing.T) {
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
}

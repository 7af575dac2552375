package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parse reads every metric of the named benchmark's result line, custom
// units included, and nothing of another benchmark's.
func TestParseReadsEveryMetricOfTheNamedLine(t *testing.T) {
	out := []byte(`goos: linux
BenchmarkRawContract-2   	 3000000	       552.2 ns/op	       376.5 cpu-ns/op	   1810828 msgs/s	      48 B/op	       1 allocs/op
BenchmarkQueue-2   	 3000000	      1348 ns/op	       567.8 cpu-ns/op	    741975 msgs/s	      50 B/op	       1 allocs/op
PASS
`)
	m := parse(out, "BenchmarkQueue")
	assert.Equal(t, map[string]float64{"ns/op": 1348, "cpu-ns/op": 567.8, "msgs/s": 741975, "B/op": 50, "allocs/op": 1}, m)
	assert.Nil(t, parse(out, "BenchmarkQueueX"), "a name is matched whole")
	assert.Nil(t, parse([]byte("--- SKIP: BenchmarkRawAMQP\n"), "BenchmarkRawAMQP"))
}

// The ratios pair rounds in order, and the report gives the median with
// the spread of the rounds.
func TestRatiosAndSpread(t *testing.T) {
	lab := []map[string]float64{{"ns/op": 100}, {"ns/op": 200}, {"ns/op": 400}}
	hand := []map[string]float64{{"ns/op": 80}, {"ns/op": 100}, {"ns/op": 100}}
	r := ratios(hand, lab, "ns/op")
	assert.Equal(t, []float64{0.8, 0.5, 0.25}, r)
	assert.Equal(t, "0.50 (rounds 0.25–0.80)", spread(r, "%.2f"))
	assert.Equal(t, 1.5, median([]float64{2, 1}))
	assert.Zero(t, median(nil))
	assert.Empty(t, ratios(hand, []map[string]float64{{}}, "ns/op"), "a round without the metric gives no ratio")
}

// rewrite replaces only the text between the marks, and refuses a file
// without them.
func TestRewriteReplacesOnlyTheMarkedSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	doc := "# Title\n\n" + beginMark + "\nold\n" + endMark + "\n\nafter\n"
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	require.NoError(t, rewrite(path, "new report\n"))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(got)
	assert.True(t, strings.HasPrefix(s, "# Title\n\n"+beginMark+"\n\n```\nmeasured "), s)
	assert.Contains(t, s, "new report\n```\n\n"+endMark+"\n\nafter\n")
	assert.NotContains(t, s, "old")

	require.NoError(t, os.WriteFile(path, []byte("no marks\n"), 0o644))
	assert.Error(t, rewrite(path, "x"))
}

package check

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
)

// A result printed by a checker comes back whole from go test's output,
// and every other line (a compiler error) is kept, unaltered, in order.
func TestParseKeepsResultsAndOtherLines(t *testing.T) {
	out := "./x.go:3:2: undefined: y\n" +
		Marker + `{"check":"nothing lost","pass":false,"plan":"seed 7","got":"C pending","want":"C done","transcript":["00:00.100 [W] x"]}` + "\n" +
		"    " + Marker + `{"check":"ok","pass":true}` + "\n" +
		"FAIL\n"
	results, rest := Parse(out)
	require.Len(t, results, 2)
	assert.Equal(t, Result{Check: "nothing lost", Plan: "seed 7", Got: "C pending", Want: "C done", Transcript: []string{"00:00.100 [W] x"}}, results[0])
	assert.True(t, results[1].Pass)
	assert.Equal(t, "./x.go:3:2: undefined: y\nFAIL\n", rest)
}

// The first plan a check fails on is the one reported, and a check that
// passed on one plan and failed on another fails.
func TestCheckerReportsTheFirstFailingPlan(t *testing.T) {
	c := &Checker{t: t, results: map[string]*Result{}}
	a := Run{Name: "default", Events: []lab.Event{{Kind: lab.Failed, Task: "C", TMs: 300, Actor: "W", Note: "boom"}}}
	b := Run{Name: "seed 7"}
	c.Expect(a, "x", 1, 1, "C")
	c.Expect(b, "x", 2, 3, "C")
	c.Expect(a, "x", 4, 5, "C")
	require.False(t, c.Passed())
	r := c.results["x"]
	assert.Equal(t, "seed 7", r.Plan)
	assert.Equal(t, "2", r.Got)
	assert.Empty(t, r.Transcript, "seed 7's run had no events about C")
	assert.Equal(t, []string{"00:00.300 [W] ❌ Error processing task C: boom"}, Transcript(a.Events, "C"))
}

// Decision and Count say what the checkers' got and want say.
func TestWords(t *testing.T) {
	assert.Equal(t, "retry via w", Decision(flow.Retry("w", nil)))
	assert.Equal(t, "park in dlq", Decision(flow.Park("dlq", "why")))
	assert.Equal(t, "requeue at once", Decision(flow.Requeue()))
	assert.Equal(t, "ack", Decision(flow.Ack()))
	assert.Equal(t, "drop", Decision(flow.Drop("why")))
	assert.Equal(t, "1 send", Count(1, "send"))
	assert.Equal(t, "0 sends", Count(0, "send"))
	assert.Equal(t, "2 sends", Count(2, "send"))
}

// Scrape reads a registry as a Prometheus server would (HTTP, the text
// format) and gives back each family with its type; Lines shows a
// histogram's HELP, TYPE, _sum and _count, not every bucket.
func TestScrapeParsesTheTextFormat(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x_seconds", Help: "x.", Buckets: []float64{.1, 1}}, []string{"queue"})
	n := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "n."}, []string{"queue"})
	reg.MustRegister(h, n)
	h.WithLabelValues("q").Observe(0.5)
	n.WithLabelValues("q").Add(2)
	x, err := Scrape(reg)
	require.NoError(t, err)
	assert.Equal(t, dto.MetricType_HISTOGRAM, x.Families["x_seconds"].GetType())
	assert.Equal(t, 2.0, x.Families["x_total"].GetMetric()[0].GetCounter().GetValue())
	assert.Equal(t, []string{"# HELP x_seconds x.", "# TYPE x_seconds histogram",
		`x_seconds_sum{queue="q"} 0.5`, `x_seconds_count{queue="q"} 1`}, x.Lines("x_seconds"))
}

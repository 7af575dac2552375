package measure

import (
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStreamWorkloadIsReproducible(t *testing.T) {
	w := StreamWorkload()
	require.Len(t, w.Plan.Tasks, 200)
	assert.Equal(t, "T001", w.Plan.Tasks[0])
	assert.Equal(t, "T200", w.Plan.Tasks[199])
	assert.Len(t, w.Plan.Poison, 20, "10 % poison")
	assert.Equal(t, w.Plan.Poison, StreamWorkload().Plan.Poison, "the same poison tasks every time")
	for _, id := range w.Plan.Poison {
		assert.Error(t, w.Plan.Fails(id, 1))
		assert.True(t, w.IsPoison(id))
	}
	assert.False(t, w.IsPoison("T000"))
}

func TestPercentileIsNearestRank(t *testing.T) {
	values := []int64{50, 10, 40, 20, 30}
	assert.Equal(t, int64(30), Percentile(values, 50))
	assert.Equal(t, int64(50), Percentile(values, 100))
	assert.Equal(t, int64(10), Percentile(values, 1))
	assert.Equal(t, int64(20), Percentile([]int64{10, 20, 30, 40}, 50))
	assert.Equal(t, int64(-1), Percentile(nil, 50))
	assert.Equal(t, []int64{50, 10, 40, 20, 30}, values, "the input is left unsorted")
}

func TestAttemptSpansPairStartsWithEnds(t *testing.T) {
	events := []lab.Event{
		{Kind: lab.Enqueued, Task: "A", TMs: 0},
		{Kind: lab.Started, Task: "A", Actor: "W", TMs: 10},
		{Kind: lab.Started, Task: "B", Actor: "V", TMs: 15},
		{Kind: lab.Failed, Task: "A", Actor: "W", TMs: 110},
		{Kind: lab.Succeeded, Task: "B", Actor: "V", TMs: 65},
		{Kind: lab.Started, Task: "A", Actor: "W", TMs: 200}, // cut short: no end
		{Kind: lab.Summary, Task: "A", TMs: 999},
	}
	spans := AttemptSpans(events)
	assert.Equal(t, []Span{{"A", "W", 10, 110}, {"B", "V", 15, 65}}, spans)
	assert.Equal(t, int64(150), BusyMs(spans, func(Span) bool { return true }))
	assert.Equal(t, int64(100), BusyMs(spans, func(s Span) bool { return s.Actor == "W" }))
	assert.Equal(t, int64(200), RunMs(events), "first to last event, summaries excluded")
}

func TestFmtMs(t *testing.T) {
	assert.Equal(t, "85 ms", FmtMs(85))
	assert.Equal(t, "4.27 s", FmtMs(4270))
	assert.Equal(t, "-", FmtMs(-1))
}

// Two workers interleave attempts of different tasks: each length pairs a
// start with the end of the same task and attempt; an unfinished attempt
// is left out.
func TestAttemptLengthsPairsTaskAndAttempt(t *testing.T) {
	events := []lab.Event{
		{Kind: lab.Started, Task: "A", Attempt: 1, TMs: 0},
		{Kind: lab.Started, Task: "B", Attempt: 1, TMs: 10},
		{Kind: lab.Failed, Task: "A", Attempt: 1, TMs: 100},
		{Kind: lab.Started, Task: "A", Attempt: 2, TMs: 100},
		{Kind: lab.Succeeded, Task: "B", Attempt: 1, TMs: 160},
		{Kind: lab.Started, Task: "C", Attempt: 1, TMs: 170},
		{Kind: lab.Succeeded, Task: "A", Attempt: 2, TMs: 230},
	}
	assert.Equal(t, []Attempt{{"A", 1, 100}, {"B", 1, 150}, {"A", 2, 130}}, AttemptLengths(events))
}

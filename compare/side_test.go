package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flow is a task C that fails, waits 1 s (arriving `late` ms late), fails
// again and is dead-lettered.
func flow(backend lab.Backend, late int64) Side {
	return Side{Backend: backend, Speed: 10, Events: []lab.Event{
		{TMs: 0, Kind: lab.Enqueued, Task: "C"},
		{TMs: 0, Kind: lab.Started, Task: "C"},
		{TMs: 100, Kind: lab.Failed, Task: "C"},
		{TMs: 100, Kind: lab.Scheduled, Task: "C", DelayMs: 1000},
		{TMs: 1100 + late, Kind: lab.Started, Task: "C"},
		{TMs: 1200 + late, Kind: lab.DeadLettered, Task: "C"},
		{TMs: 1300 + late, Kind: lab.Enqueued, Task: "D"},
		{TMs: 1300 + late, Kind: lab.Scheduled, Task: "D", DelayMs: 2000}, // never fires
	}}
}

func TestDelaysPairScheduledWithNextAttempt(t *testing.T) {
	d := flow(lab.Rabbit, 30).Delays()
	require.Len(t, d, 1, "D's hop never fired, so it is not a delay")
	assert.Equal(t, Delay{Task: "C", Configured: time.Second, Observed: 1030 * time.Millisecond}, d[0])
}

func TestDelayTableReportsRealMilliseconds(t *testing.T) {
	tab := DelayTable(map[lab.Backend]string{lab.Rabbit: "the broker"}, []Side{flow(lab.Rabbit, 30)})
	require.Len(t, tab.Rows, 1)
	// 30 ms late in lesson time at speed 10 is 3 ms of real time.
	assert.Equal(t, []string{"rabbit", "1s", "1", "3.0", "3.0"}, tab.Rows[0])
	assert.Contains(t, tab.Notes, "rabbit: the broker keeps the timer.")
	assert.Contains(t, strings.Join(tab.Notes, " "), "counts any wait for a busy", "lateness is not only the timer's (issue 20, compare 12)")
	assertFits(t, tab)
}

func TestDelayTableShowsTheSpreadOfRepeatedRuns(t *testing.T) {
	runs := []Side{flow(lab.Rabbit, 30), flow(lab.Rabbit, 200), flow(lab.Rabbit, 50)}
	tab := DelayTable(nil, runs)
	require.Len(t, tab.Rows, 1)
	// 3, 20 and 5 ms real: median 5, a spread of 17 ms flags the row.
	assert.Equal(t, []string{"rabbit ~", "1s", "1", "5.0 [3.0–20.0]", "5.0 [3.0–20.0]"}, tab.Rows[0])
	assert.Contains(t, tab.Notes, unsteadyNote)

	steady := DelayTable(nil, []Side{flow(lab.Rabbit, 30), flow(lab.Rabbit, 40)})
	assert.Equal(t, "rabbit", steady.Rows[0][0], "a 1 ms spread is scheduling noise, not flagged")
	assert.NotContains(t, steady.Notes, unsteadyNote)
}

func TestTasksFlagsDisagreement(t *testing.T) {
	a, b := flow(lab.InMem, 0), flow(lab.Rabbit, 0)
	b.Events = append(b.Events, lab.Event{TMs: 5000, Kind: lab.Succeeded, Task: "D"})
	tab := Tasks([]Side{a}, []Side{b}, "")
	require.Len(t, tab.Rows, 2)
	assert.Equal(t, []string{"C", "dead", "2", "00:01.100", "dead", "2", "00:01.100", "yes"}, tab.Rows[0])
	assert.Equal(t, "NO", tab.Rows[1][7], "D is pending on one side and done on the other")
}

// retried is flow with one more failed attempt of C before it is parked.
func retried(backend lab.Backend) Side {
	s := flow(backend, 0)
	extra := []lab.Event{
		{TMs: 1150, Kind: lab.Failed, Task: "C"},
		{TMs: 1150, Kind: lab.Scheduled, Task: "C", DelayMs: 1000},
		{TMs: 2150, Kind: lab.Started, Task: "C"},
	}
	s.Events = append(append(append([]lab.Event(nil), s.Events[:5]...), extra...), s.Events[5:]...)
	return s
}

func TestTasksOverRepeatsShowRangesAndTimingSensitiveComparesFates(t *testing.T) {
	a := []Side{flow(lab.InMem, 0), flow(lab.InMem, 0)}
	b := []Side{flow(lab.Rabbit, 0), retried(lab.Rabbit)}
	exact := Tasks(a, b, "")
	assert.Equal(t, "same?", exact.Header[7])
	assert.Equal(t, []string{"C", "dead", "2", "00:01.100", "dead", "2–3", "00:01.100", "NO"}, exact.Rows[0],
		"the broker's attempts changed between runs: a disagreement where timings are exact")

	sensitive := Tasks(a, b, "calls land at real times")
	assert.Equal(t, "same fate?", sensitive.Header[7])
	assert.Equal(t, "yes", sensitive.Rows[0][7], "same fate; attempts depend on timing and are not compared")
	assert.Contains(t, strings.Join(sensitive.Notes, " "), "only fates are compared: calls land at real times.")
}

func TestSpread(t *testing.T) {
	assert.Equal(t, Spread{Median: 2, Min: 1, Max: 9}, spreadOf([]float64{9, 1, 2}))
	assert.Equal(t, 2.5, spreadOf([]float64{4, 1, 2, 3}).Median)
	assert.Equal(t, "3.9× [3.3–8.9]", Spread{3.9, 3.3, 8.9}.Format("%.1f", "×"))
	assert.Equal(t, "12", Spread{12, 12, 12}.Format("%.0f", ""))
	assert.True(t, Spread{10, 7, 13}.Unsteady(0))
	assert.False(t, Spread{10, 9, 11}.Unsteady(0))
	assert.False(t, Spread{1, 0.1, 1.9}.Unsteady(2), "under the floor")
	assert.Equal(t, "5–7", intRange([]int{7, 5, 6}))
}

func TestWrapKeepsLinesInWidth(t *testing.T) {
	lines := wrap(strings.Repeat("word ", 50), 20)
	require.Greater(t, len(lines), 1)
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), 20)
	}
	assert.Equal(t, strings.Repeat("word ", 50), strings.Join(lines, " ")+" ")
}

func TestSparkline(t *testing.T) {
	assert.Equal(t, "▁▄█▁", Sparkline([]int{0, 1, 2, 0}))
	assert.Equal(t, "▁▁", Sparkline([]int{0, 0}))
}

func TestMainConsumersCountsDistinctWorkersOnTheFirstQueue(t *testing.T) {
	s := Side{Events: []lab.Event{
		{Kind: lab.Enqueued, Task: "A", Queue: "main"},
		{Kind: lab.Started, Task: "A", Queue: "main", Actor: "W-1"},
		{Kind: lab.Started, Task: "B", Queue: "main", Actor: "W-2"},
		{Kind: lab.Started, Task: "C", Queue: "main", Actor: "W-1"},
		{Kind: lab.Started, Task: "A", Queue: "retry", Actor: "Retry"},
	}}
	assert.Equal(t, 2, MainConsumers(s))
}

func TestNoteLinesFitAndUnwrapJoinsThem(t *testing.T) {
	text := strings.TrimSpace(strings.Repeat("a timing-sensitive lesson ", 12))
	lines := noteLines(text)
	require.Greater(t, len(lines), 2)
	for i, l := range lines {
		assert.LessOrEqual(t, len(l), noteWidth)
		assert.Equal(t, i > 0, strings.HasPrefix(l, "  "), "continuations are indented: %q", l)
	}
	tab := Unwrapped(render.Table{Notes: append(append([]string{"first"}, lines...), "last")})
	assert.Equal(t, []string{"first", text, "last"}, tab.Notes)
}

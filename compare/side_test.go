package compare

import (
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
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
	tab := DelayTable(map[lab.Backend]string{lab.Rabbit: "broker"}, flow(lab.Rabbit, 30))
	require.Len(t, tab.Rows, 1)
	// 30 ms late in lesson time at speed 10 is 3 ms of real time.
	assert.Equal(t, []string{"rabbit", "1s", "1", "3.0", "3.0", "broker"}, tab.Rows[0])
}

func TestTasksFlagsDisagreement(t *testing.T) {
	a, b := flow(lab.InMem, 0), flow(lab.Rabbit, 0)
	b.Events = append(b.Events, lab.Event{TMs: 5000, Kind: lab.Succeeded, Task: "D"})
	tab := Tasks(a, b)
	require.Len(t, tab.Rows, 2)
	assert.Equal(t, []string{"C", "dead", "2", "00:01.100", "dead", "2", "00:01.100", "yes"}, tab.Rows[0])
	assert.Equal(t, "NO", tab.Rows[1][7], "D is pending on one side and done on the other")
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

package compare

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/lab"
)

// brokerRun is a recorded run of two tasks on one broker: A ends with
// fateA after attempts, B is done at once; carried are A's counters.
func brokerRun(label string, fateA lab.Fate, attempts int, carried ...Carried) BrokerRun {
	ev := []lab.Event{{Kind: lab.Enqueued, Task: "A", Queue: "q"}, {Kind: lab.Enqueued, Task: "B", Queue: "q"}}
	for range attempts {
		ev = append(ev, lab.Event{Kind: lab.Started, Task: "A", Queue: "q"})
	}
	settle := map[lab.Fate]lab.Kind{lab.FateDone: lab.Succeeded, lab.FateDead: lab.DeadLettered, lab.FateLost: lab.Lost}
	ev = append(ev, lab.Event{Kind: settle[fateA], Task: "A", Queue: "q"},
		lab.Event{Kind: lab.Started, Task: "B", Queue: "q"}, lab.Event{Kind: lab.Succeeded, Task: "B", Queue: "q"})
	return BrokerRun{Side: Side{Backend: lab.Rabbit, Label: label, Speed: 1, Events: ev},
		Carried: map[string][]Carried{"A": carried}}
}

func TestDifferencesTableRowsOnlyWhatDiffers(t *testing.T) {
	old := brokerRun("RabbitMQ 3.10.8", lab.FateDead, 3, Carried{0, -1, -1}, Carried{1, -1, -1}, Carried{2, -1, -1})
	v43 := brokerRun("RabbitMQ 4.3.6", lab.FateDead, 3, Carried{0, -1, -1}, Carried{1, -1, -1}, Carried{1, -1, -1})
	tab := DifferencesTable([]BrokerRun{old}, []BrokerRun{v43})
	assert.Equal(t, []string{"task", "what", "RabbitMQ 3.10.8", "RabbitMQ 4.3.6"}, tab.Header)
	assert.Equal(t, [][]string{{"A", "x-death per delivery", "0 1 2", "0 1 1"}}, tab.Rows)

	same := DifferencesTable([]BrokerRun{old}, []BrokerRun{old})
	assert.Equal(t, "nothing", same.Rows[0][1], "one row says they agree")

	longer := brokerRun("RabbitMQ 4.3.6", lab.FateDead, 4, Carried{0, -1, -1}, Carried{1, -1, -1}, Carried{2, -1, -1}, Carried{3, -1, -1})
	assert.Equal(t, [][]string{{"A", "attempts", "3", "4"}}, DifferencesTable([]BrokerRun{old}, []BrokerRun{longer}).Rows,
		"one more delivery is an attempt, not a counter that differs")
}

func TestDifferencesTableNamesARefusedRun(t *testing.T) {
	old := brokerRun("RabbitMQ 3.10.8", lab.FateDone, 2)
	refused := brokerRun("RabbitMQ 4.3.6", lab.FateLost, 1)
	refused.Err = errors.New(`declaring queue q: Exception (406) Reason: "PRECONDITION_FAILED"`)
	rows := DifferencesTable([]BrokerRun{old}, []BrokerRun{refused}).Rows
	assert.Equal(t, []string{"-", "the run", "finished", `failed: declaring queue q: Exception (406) Reason: "PRECONDITION_FAILED"`}, rows[0])
	assert.Contains(t, rows, []string{"A", "fate", "done", "lost"})
	assert.Contains(t, rows, []string{"A", "attempts", "2", "1"})

	never := BrokerRun{Side: Side{Backend: lab.Rabbit, Label: "RabbitMQ 3.10.8", Speed: 1}, Err: errors.New("lesson 25 needs RabbitMQ 4.3")}
	rows = DifferencesTable([]BrokerRun{never}, []BrokerRun{old}).Rows
	assert.Equal(t, [][]string{{"-", "the run", "failed: lesson 25 needs RabbitMQ 4.3", "finished"},
		{"A", "fate", "-", "done"}, {"B", "fate", "-", "done"}}, rows, "a task one broker never had is one row: its fate")
}

func TestSeriesElidesALongOne(t *testing.T) {
	var cs []Carried
	for i := range 20 {
		cs = append(cs, Carried{DeliveryCount: int64(i), Deaths: 0, Acquired: -1})
	}
	assert.Equal(t, "0 1 2 3 4 5 6 … 18 19 (20)", seriesOf(cs, func(c Carried) int64 { return c.DeliveryCount }))
	assert.Equal(t, "- - -", seriesOf(cs[:3], func(c Carried) int64 { return c.Acquired }))
	assert.False(t, written("- - -"))
	assert.True(t, written("- 0"))
}

func TestHeldBackNeedsHalfTheDelayAndRealTime(t *testing.T) {
	assert.True(t, heldBack(Delay{Configured: 30e9, Observed: 298e9}, 400), "268 s late at 400×: 670 ms real")
	assert.False(t, heldBack(Delay{Configured: 30e9, Observed: 46e9}, 400), "16 s late at 400× is 40 ms real: noise")
	assert.False(t, heldBack(Delay{Configured: 30e9, Observed: 40e9}, 1), "late by a third of its delay")
}

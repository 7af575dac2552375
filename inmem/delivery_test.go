package inmem

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A holding queue keeps its tasks without keeping Wait waiting.
func TestHoldingQueueDoesNotBlockWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.DefaultPlan())
		q := sys.Queue("queue", 1)
		dlq := sys.HoldingQueue("deadLetterQueue", 1)
		q.Enqueue("P", "C")
		sys.Worker("W", q, func(t *Task) {
			if sys.Attempt("W", q, t) != nil {
				q.DeadLetter("W", t, dlq, "failed")
			}
		})
		require.NoError(t, sys.Wait(context.Background()))
		assert.Equal(t, 1, dlq.Len(), "the task rests in the DLQ")
		assert.Len(t, labtest.OfKind(rec.Events, lab.DeadLettered), 1)
	})
}

func TestHoldingQueueRefusesWorkers(t *testing.T) {
	var rec lab.Recorder
	sys := New(context.Background(), lab.NewStream("q00", lab.InMem, lab.NewClock(1), &rec), lab.Plan{})
	dlq := sys.HoldingQueue("deadLetterQueue", 1)
	assert.PanicsWithValue(t,
		`inmem: Worker on holding queue "deadLetterQueue": create queues that workers consume with System.Queue`,
		func() { sys.Worker("W", dlq, func(*Task) {}) })
}

// Redeliver hands the same task out again at the tail, attempt count kept,
// and the pieces Begin/Succeed/Skip report one delivery each.
func TestRedeliverAndSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{})
		q := sys.Queue("queue", 2)
		q.Enqueue("P", "A")
		q.Enqueue("P", "B")
		var order []string
		seen := map[string]bool{}
		sys.Worker("W", q, func(t *Task) {
			order = append(order, t.ID)
			sys.Begin("W", q, t)
			if seen[t.ID] {
				sys.Skip("W", q, t, "seen")
				return
			}
			seen[t.ID] = true
			sys.Succeed("W", q, t, "did it")
			if t.ID == "A" {
				q.Redeliver("Queue", t, "ack lost")
			}
		})
		require.NoError(t, sys.Wait(context.Background()))

		assert.Equal(t, []string{"A", "B", "A"}, order, "the redelivery goes to the tail")
		dup := labtest.OfKind(rec.Events, lab.Duplicate)
		require.Len(t, dup, 1)
		assert.Equal(t, "A", dup[0].Task)
		assert.Equal(t, 2, dup[0].Attempt)
		assert.Equal(t, "seen", dup[0].Note)
		red := labtest.OfKind(rec.Events, lab.Redelivered)
		require.Len(t, red, 1)
		assert.Equal(t, 1, red[0].Attempt)
		assert.Equal(t, "did it", labtest.OfKind(rec.Events, lab.Succeeded)[0].Note)
		fates := map[string]lab.Fate{}
		for _, r := range sys.Stream().Tasks() {
			fates[r.ID] = r.Fate
		}
		assert.Equal(t, map[string]lab.Fate{"A": lab.FateDone, "B": lab.FateDone}, fates)
	})
}

func TestMailerAlertsThenTakesItsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		stream := lab.NewStream("q00", lab.InMem, lab.NewClock(2), &rec)
		m := Mailer{Stream: stream, Latency: 500 * time.Millisecond}
		start := time.Now()
		m.Send("C", DLQAlert("C"))
		assert.Equal(t, 250*time.Millisecond, time.Since(start), "500 ms of lesson time at speed 2")
		require.Len(t, rec.Events, 1)
		e := rec.Events[0]
		assert.Equal(t, lab.Alerted, e.Kind)
		assert.Equal(t, int64(0), e.TMs, "stamped as the sending starts")
		assert.Equal(t, "MockEmailService", e.Actor)
		assert.Equal(t, "To: admin@example.com\nSubject: DLQ Alert: Task Failed\nBody: The following task failed all retries: C", e.Note)
	})
}

package inmem

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParkedTasksDoNotKeepWaitWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plan := lab.Plan{Tasks: []string{"A", "B"}, Poison: []string{"B"}, Work: 100 * time.Millisecond}
		rec := &lab.Recorder{}
		sys := newTestSystem(rec, plan)
		q := sys.Queue("queue", 2)
		dlq := sys.HoldingQueue("deadLetterQueue", 2)
		sys.Worker("Worker", q, func(task *Task) {
			if err := sys.Attempt("Worker", q, task); err != nil {
				q.DeadLetter("Worker", task, dlq, err.Error())
			}
		})
		q.Enqueue("Producer", "A")
		q.Enqueue("Producer", "B")
		require.NoError(t, sys.Wait(context.Background()), "Wait returns with B parked")

		assert.Equal(t, 1, dlq.Len(), "B rests in the dead-letter queue")
		assert.Equal(t, 0, q.Len())
		tasks := sys.Stream().Finish()
		assert.Equal(t, lab.FateDone, tasks[0].Fate)
		assert.Equal(t, lab.FateDead, tasks[1].Fate)
		assert.Equal(t, lab.DeadLettered, rec.Events[len(rec.Events)-3].Kind, "dead-lettered, then the two summaries")
	})
}

func TestCrashLosesParkedTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &lab.Recorder{}
		sys := newTestSystem(rec, lab.Plan{Poison: []string{"A"}})
		q := sys.Queue("queue", 1)
		dlq := sys.HoldingQueue("deadLetterQueue", 1)
		sys.Worker("Worker", q, func(task *Task) {
			if err := sys.Attempt("Worker", q, task); err != nil {
				q.DeadLetter("Worker", task, dlq, err.Error())
			}
		})
		q.Enqueue("Producer", "A")
		require.NoError(t, sys.Wait(context.Background()))
		sys.Crash("lab")
		last := rec.Events[len(rec.Events)-1]
		assert.Equal(t, lab.Lost, last.Kind)
		assert.Equal(t, "A", last.Task)
		assert.Equal(t, "deadLetterQueue", last.Queue, "an in-memory DLQ dies with the process")
	})
}

func TestQueueNamesInCreationOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := newTestSystem(&lab.Recorder{}, lab.Plan{})
		sys.Queue("queue", 1)
		sys.Queue("retryQueue", 1)
		sys.HoldingQueue("deadLetterQueue", 1)
		assert.Equal(t, []string{"queue", "retryQueue", "deadLetterQueue"}, sys.QueueNames())
	})
}

// A DLQ the run parked tasks in can be given a consumer afterwards (a
// replay): it used to panic; now its tasks are handed out in order and
// Wait waits for them.
func TestFlowConsumesAHoldingQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		f := NewFlow(context.Background(), lab.NewStream("q00", lab.InMem, lab.NewClock(1), &rec), 8)
		topo := flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}, {Name: "dlq", Role: flow.DLQ}}}
		require.NoError(t, f.Declare(context.Background(), topo))
		parked := make(chan struct{})
		require.NoError(t, f.Consume(context.Background(), flow.Consumer{Queue: "work", Actor: "W", Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			if d.Task == "B" {
				defer close(parked)
			}
			return flow.Park("dlq", "failed")
		}}))
		require.NoError(t, f.Publish(context.Background(), "P", "work", "A"))
		require.NoError(t, f.Publish(context.Background(), "P", "work", "B"))
		<-parked
		synctest.Wait()
		var replayed []string
		require.NotPanics(t, func() {
			require.NoError(t, f.Consume(context.Background(), flow.Consumer{Queue: "dlq", Actor: "Replayer", Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
				replayed = append(replayed, d.Task)
				return flow.Ack()
			}}))
		})
		require.NoError(t, f.Wait(context.Background()))
		assert.Equal(t, []string{"A", "B"}, replayed, "in the order they were parked")
		n, _ := f.Depth(context.Background(), "dlq")
		assert.Zero(t, n)
	})
}

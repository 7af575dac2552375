package inmem

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

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

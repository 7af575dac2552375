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

// newTestSystem returns a System on a fresh stream at speed 1 and the
// recorder that sees its events. Call it inside a synctest bubble.
func TestProduceSpacesArrivalsAndWaitWaitsForTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plan := lab.Plan{Work: 10 * time.Millisecond}
		rec := &lab.Recorder{}
		sys := newTestSystem(rec, plan)
		q := sys.Queue("queue", 4)
		sys.Worker("Worker", q, func(task *Task) { _ = sys.Attempt("Worker", q, task) })
		// Each task is done long before the next arrives: without the
		// producer counted as work, Wait would return after the first.
		sys.Produce("Producer", q, []string{"A", "B", "C"}, time.Second)
		require.NoError(t, sys.Wait(context.Background()))

		var enqueued, done []int64
		for _, e := range rec.Events {
			switch e.Kind {
			case lab.Enqueued:
				assert.Equal(t, "Producer", e.Actor)
				enqueued = append(enqueued, e.TMs)
			case lab.Succeeded:
				done = append(done, e.TMs)
			}
		}
		assert.Equal(t, []int64{0, 1000, 2000}, enqueued)
		assert.Equal(t, []int64{10, 1010, 2010}, done)
	})
}

func TestProduceStopsWithTheSystem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &lab.Recorder{}
		sys := newTestSystem(rec, lab.Plan{})
		q := sys.Queue("queue", 4)
		sys.Produce("Producer", q, []string{"A", "B", "C"}, time.Second)
		time.Sleep(1500 * time.Millisecond)
		sys.Stop()
		time.Sleep(5 * time.Second)
		var ids []string
		for _, e := range rec.Events {
			ids = append(ids, e.Task)
		}
		assert.Equal(t, []string{"A", "B"}, ids, "C was due after the stop and never created")
	})
}

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
func newTestSystem(t *testing.T, plan lab.Plan) (*System, *lab.Recorder) {
	t.Helper()
	rec := &lab.Recorder{}
	stream := lab.NewStream("test", lab.InMem, lab.NewClock(1), rec)
	return New(context.Background(), stream, plan), rec
}

func TestProduceSpacesArrivalsAndWaitWaitsForTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plan := lab.Plan{Work: 10 * time.Millisecond}
		sys, rec := newTestSystem(t, plan)
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
		sys, rec := newTestSystem(t, lab.Plan{})
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

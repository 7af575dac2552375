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

// assertNothingLeft checks that no goroutine or timer of sys survives, by
// the system's own counts (the process's goroutine count also moves with
// goroutines that are not the system's).
func assertNothingLeft(t *testing.T, sys *System) {
	t.Helper()
	assert.Equal(t, 0, sys.Workers(), "worker loops left running")
	assert.Equal(t, 0, sys.Goroutines(), "goroutines of the system left running")
	assert.Equal(t, 0, sys.Timers(), "timers left pending or delivering")
}

// A whole run, with a producer, two workers, retry timers and a drop: once
// Wait returns, every goroutine and timer of the system is gone.
func TestWaitLeavesNoGoroutineOrTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.DefaultPlan()) // C fails every attempt
		queue, retry := sys.Queue("queue", 4), sys.Queue("retryQueue", 4)
		sys.Worker("W", queue, func(t *Task) {
			if sys.Attempt("W", queue, t) != nil {
				sys.Schedule("W", t, queue.Name(), retry, time.Second)
			}
		})
		sys.Worker("R", retry, func(t *Task) {
			if err := sys.Attempt("R", retry, t); err != nil {
				sys.Drop("R", t, retry.Name(), err.Error())
			}
		})
		sys.Produce("P", queue, []string{"A", "B", "C", "D"}, 50*time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 3, sys.Goroutines(), "two workers and the producer while running")

		require.NoError(t, sys.Wait(context.Background()))
		assert.Len(t, labtest.OfKind(rec.Events, lab.Dropped), 1, "the run went through the retry timer")
		assertNothingLeft(t, sys)
	})
}

// Everything that can block at once when a run is cut short: a producer
// and a handler each waiting for room in a full queue, a timer delivering
// into a full queue, and a timer still pending. Wait gives up at its
// deadline, and nothing of the system is left blocked behind it.
func TestWaitAtTheDeadlineLeavesNothingBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{})
		queue := sys.Queue("queue", 1)
		full := sys.Queue("full", 1) // nobody consumes it
		full.Enqueue("P", "F")
		sys.Worker("W", queue, func(t *Task) { queue.MoveTo("W", t, full) }) // blocks: full is full
		sys.Produce("P", queue, []string{"A", "B", "C"}, 0)                  // A is taken, B fills queue, C waits for room
		sys.Schedule("S", &Task{ID: "X"}, "elsewhere", full, time.Second)    // blocks on delivery
		sys.Schedule("S", &Task{ID: "Y"}, "elsewhere", full, time.Hour)      // still pending at the deadline

		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, 3, sys.Goroutines(), "the worker, the producer and X's delivery, all blocked")
		assert.Equal(t, 2, sys.Timers(), "X delivering, Y pending")

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.ErrorIs(t, sys.Wait(ctx), context.DeadlineExceeded)
		assertNothingLeft(t, sys)

		time.Sleep(2 * time.Hour)
		assert.Equal(t, 1, full.Len(), "a stopped timer never delivers")
		assert.Equal(t, 0, sys.Timers())
	})
}

// Stop and a timer firing at the same instant: whichever goes first, Stop
// returns with no delivery in progress, and the task is either on its
// queue or still recorded on its timer, so a crash reports it lost once.
func TestStopRacingAFiringTimer(t *testing.T) {
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			var rec lab.Recorder
			sys := newTestSystem(&rec, lab.Plan{})
			to := sys.Queue("to", 1) // nobody consumes it
			sys.Schedule("S", &Task{ID: "X"}, "from", to, time.Second)

			time.Sleep(time.Second) // wakes with the timer's goroutine
			sys.Stop()
			assertNothingLeft(t, sys)

			sys.Crash("process")
			lost := labtest.OfKind(rec.Events, lab.Lost)
			require.Len(t, lost, 1, "the task is accounted for exactly once")
			assert.Equal(t, "X", lost[0].Task)
		})
	}
}

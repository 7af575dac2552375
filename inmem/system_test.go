package inmem

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestSystem returns a system at speed 1 recording into rec. Call it
// inside a synctest bubble.
func newTestSystem(rec *lab.Recorder, plan lab.Plan) *System {
	stream := lab.NewStream("q00", lab.InMem, lab.NewClock(1), rec)
	return New(context.Background(), stream, plan)
}

func TestScheduleMovesAfterTheDelayInLessonTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		stream := lab.NewStream("q00", lab.InMem, lab.NewClock(10), &rec) // 10× faster
		sys := New(context.Background(), stream, lab.Plan{})
		from, to := sys.Queue("from", 1), sys.Queue("to", 1)
		arrived := make(chan time.Duration, 1)
		sys.Worker("W", to, func(*Task) { arrived <- stream.Clock().Elapsed() })

		start := time.Now()
		sys.Schedule("S", &Task{ID: "X"}, from.Name(), to, 2*time.Second)
		require.NoError(t, sys.Wait(context.Background()))

		assert.Equal(t, 2*time.Second, <-arrived, "2 s of lesson time")
		assert.Equal(t, 200*time.Millisecond, time.Since(start), "0.2 s of real time at speed 10")
		s := labtest.OfKind(rec.Events, lab.Scheduled)
		require.Len(t, s, 1)
		assert.Equal(t, int64(2000), s[0].DelayMs)
		assert.Equal(t, "to", s[0].To)
	})
}

// Wait must not return while a task waits on a timer, even though no queue
// holds anything and no handler runs.
func TestWaitCountsPendingTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{})
		q := sys.Queue("q", 1)
		handled := false
		sys.Worker("W", q, func(*Task) { handled = true })
		start := time.Now()
		sys.Schedule("S", &Task{ID: "X"}, "elsewhere", q, time.Second)

		require.NoError(t, sys.Wait(context.Background()))
		assert.True(t, handled, "Wait returned before the timer's task was handled")
		assert.Equal(t, time.Second, time.Since(start))
	})
}

// Wait returns only once the handler holding the last task has returned.
func TestWaitCountsHandlersInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{Work: 300 * time.Millisecond})
		q := sys.Queue("q", 2)
		q.Enqueue("P", "A")
		q.Enqueue("P", "B")
		sys.Worker("W", q, func(t *Task) { _ = sys.Attempt("W", q, t) })
		start := time.Now()
		require.NoError(t, sys.Wait(context.Background()))
		assert.Equal(t, 600*time.Millisecond, time.Since(start))
		assert.Len(t, labtest.OfKind(rec.Events, lab.Succeeded), 2)
	})
}

func TestWaitReturnsTheContextError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{})
		q := sys.Queue("q", 1)
		q.Enqueue("P", "A") // nobody consumes q: never idle
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.ErrorIs(t, sys.Wait(ctx), context.DeadlineExceeded)
	})
}

func TestCrashReportsQueuedAndScheduledTasksLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{})
		q := sys.Queue("queue", 2)
		retry := sys.Queue("retryQueue", 1)
		q.Enqueue("P", "A")
		q.Enqueue("P", "B")
		sys.Schedule("W", &Task{ID: "C"}, "queue", retry, time.Second)

		sys.Crash("process")
		lost := labtest.OfKind(rec.Events, lab.Lost)
		require.Len(t, lost, 3)
		byTask := map[string]lab.Event{}
		for _, e := range lost {
			byTask[e.Task] = e
		}
		assert.Equal(t, "queue", byTask["A"].Queue)
		assert.Equal(t, "queue", byTask["B"].Queue)
		assert.Equal(t, "retryQueue", byTask["C"].To, "the timer's task is lost on its way")

		time.Sleep(2 * time.Second)
		assert.Equal(t, 0, retry.Len(), "a stopped timer never delivers")
		assert.Len(t, labtest.OfKind(rec.Events, lab.Lost), 3, "nothing is reported twice")
		assert.ErrorIs(t, sys.Wait(context.Background()), ErrCrashed, "Wait says the run crashed")
	})
}

func TestAttemptFollowsThePlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.DefaultPlan())
		q := sys.Queue("q", 1)
		c := &Task{ID: "C"}
		start := time.Now()
		assert.ErrorIs(t, sys.Attempt("W", q, c), lab.ErrPoison)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "one attempt takes Plan.Work")
		assert.Equal(t, 1, c.Attempt)
		assert.NoError(t, sys.Attempt("W", q, &Task{ID: "A"}))
		assert.Equal(t, []lab.Kind{lab.Started, lab.Failed, lab.Started, lab.Succeeded},
			[]lab.Kind{rec.Events[0].Kind, rec.Events[1].Kind, rec.Events[2].Kind, rec.Events[3].Kind})
	})
}

// A crash from another goroutine (the lesson's interrupt timer) ends Wait
// only after every lost task is reported, so the run's summaries see them.
func TestWaitReturnsAfterTheCrashIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{Work: time.Second})
		q := sys.Queue("queue", 3)
		retry := sys.Queue("retryQueue", 3)
		sys.Worker("W", q, func(task *Task) { sys.Schedule("W", task, "queue", retry, time.Minute) })
		q.Enqueue("P", "A")
		q.Enqueue("P", "B")
		time.AfterFunc(time.Second, func() { sys.Crash("process") })
		require.ErrorIs(t, sys.Wait(context.Background()), ErrCrashed)
		assert.Len(t, labtest.OfKind(rec.Events, lab.Lost), 2, "both waiting tasks reported lost before Wait returned")
		sys.Crash("process") // a process dies once: a second crash changes nothing
		assert.Len(t, labtest.OfKind(rec.Events, lab.Lost), 2)
	})
}

// Workers counts exactly the goroutines Worker starts: with no producer
// and no timer they are all the system's goroutines, and Stop ends them.
// (It reads the system's own counts: runtime.NumGoroutine counts the whole
// process, and flaked under load when it compared the two.)
func TestWorkersAreTheSystemsGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := newTestSystem(&lab.Recorder{}, lab.Plan{})
		for i := range 5 {
			sys.Worker(fmt.Sprintf("W%d", i), sys.Queue(fmt.Sprintf("q%d", i), 1), func(*Task) {})
		}
		synctest.Wait() // every worker is parked on its queue
		assert.Equal(t, 5, sys.Workers())
		assert.Equal(t, 5, sys.Goroutines(), "workers are the only goroutines")
		assert.Equal(t, 0, sys.Timers())
		sys.Stop()
		assert.Equal(t, 0, sys.Workers(), "stopped workers are gone")
		assert.Equal(t, 0, sys.Goroutines(), "nothing of the system outlives Stop")
	})
}

// After a crash, a task a straggling producer puts in a queue is reported
// lost at once instead of waiting in memory nobody reads.
func TestPutAfterCrashIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{})
		q := sys.Queue("queue", 2)
		sys.Crash("process")
		q.Enqueue("Producer", "late")
		lost := labtest.OfKind(rec.Events, lab.Lost)
		require.Len(t, lost, 1)
		assert.Equal(t, "late", lost[0].Task)
		assert.Equal(t, 0, q.Len())
		assert.ErrorIs(t, sys.Wait(context.Background()), ErrCrashed, "nothing is left in flight")
	})
}

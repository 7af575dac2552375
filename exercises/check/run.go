package check

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// Run is one run of the student's code on one plan.
type Run struct {
	Name   string // the plan as the student reads it: "the default plan", "seed 7"
	Plan   lab.Plan
	Events []lab.Event // every event, summaries last
	Err    error       // what ended the run early, if anything
}

// Named is a plan with the name a failed check shows, run at a lesson
// speed (0 is 1: lesson time is real time, which synctest fakes anyway).
// A speed other than 1 tells the lesson clock from the wall clock: a
// timer armed with time.AfterFunc instead of sys.Clock().AfterFunc fires
// Speed times too late in lesson time.
type Named struct {
	Name  string
	Plan  lab.Plan
	Speed float64
}

// Plans are the plans an in-memory exercise is checked on: the seed's
// A, B, C, D with C poison, then the same tasks with 30 % seeded
// transient failures on two seeds (which tasks fail when differs).
func Plans() []Named {
	return []Named{
		{Name: "the default plan (C is poison)", Plan: lab.DefaultPlan()},
		Seeded(7),
		Seeded(12),
	}
}

// Seeded is the default plan (C poison) with 30 % seeded transient
// failures besides: an exercise whose mistake shows only on some pattern
// of failures picks seeds that have it.
func Seeded(seed int64) Named {
	p := lab.DefaultPlan()
	p.Seed, p.FailRate = seed, 0.3
	return Named{Name: fmt.Sprintf("seed %d (30 %% transient failures)", seed), Plan: p}
}

// Limit bounds a run in lesson time. Under synctest it costs nothing to
// reach, so a loop that never ends is reported as such in an instant.
const Limit = 10 * time.Minute

// ErrLimit is what ended a run that was still going after Limit.
var ErrLimit = fmt.Errorf("the run was still going after %v of lesson time: a task that loops for ever, or a worker that never returns", Limit)

// InMem runs body on plan inside a synctest bubble, with a stream on a
// fresh lesson clock (fake time), bounded by Limit; it finishes the
// stream (one summary per task) and returns the run.
func InMem(t *testing.T, n Named, body func(ctx context.Context, s *lab.Stream) error) Run {
	t.Helper()
	run := Run{Name: n.Name, Plan: n.Plan}
	speed := n.Speed
	if speed == 0 {
		speed = 1
	}
	w := watch(n.Name)
	defer w.stop()
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		s := lab.NewStream("ex", lab.InMem, lab.NewClock(speed), &rec, w)
		ctx, cancel := context.WithTimeout(context.Background(), Limit)
		defer cancel()
		err := body(ctx, s)
		if errors.Is(err, context.DeadlineExceeded) {
			err = ErrLimit
		}
		run.Err = err
		s.Finish()
		run.Events = rec.Events
	})
	return run
}

// OnQueue is the setup most in-memory exercises share: a System on the
// plan, the main queue "queue" holding the plan's tasks (room for every
// task, so a put never blocks), start to wire the student's workers, and
// a wait until every task is settled.
func OnQueue(t *testing.T, n Named, start func(sys *inmem.System, queue *inmem.Queue, room int)) Run {
	t.Helper()
	return InMem(t, n, func(ctx context.Context, s *lab.Stream) error {
		sys := inmem.New(ctx, s, n.Plan)
		room := len(n.Plan.Tasks) + 1
		queue := sys.Queue("queue", room)
		for _, id := range n.Plan.Tasks {
			queue.Enqueue("Producer", id)
		}
		start(sys, queue, room)
		return sys.Wait(ctx)
	})
}

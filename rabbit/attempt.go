package rabbit

import (
	"context"

	"github.com/queuelab/qlab/lab"
)

// ProcessFunc does the work of one attempt of task and reports its error.
type ProcessFunc func(ctx context.Context, task string, attempt int) error

// Simulate is the plan's work as a ProcessFunc: sleep plan.Work of lesson
// time, then fail as plan.Fails says.
func Simulate(plan lab.Plan, clock lab.Clock) ProcessFunc {
	return func(ctx context.Context, task string, attempt int) error {
		if err := clock.Wait(ctx, plan.Work); err != nil {
			return err
		}
		return plan.Fails(task, attempt)
	}
}

// Attempt runs one processing attempt of d by actor: it emits started,
// runs process and emits succeeded or failed, and returns process's error.
// Settling the delivery (Ack, Reject) is the caller's decision.
func Attempt(ctx context.Context, stream *lab.Stream, actor string, d *Delivery, process ProcessFunc) error {
	return AttemptAs(ctx, stream, actor, d, d.Attempt(), process)
}

// AttemptAs is Attempt for a worker that counts attempts itself (from a
// retry header of its own rather than x-death): n is the attempt number
// the events carry and process gets.
func AttemptAs(ctx context.Context, stream *lab.Stream, actor string, d *Delivery, n int, process ProcessFunc) error {
	at := lab.Event{Task: d.Task, Queue: d.Queue, Actor: actor, Attempt: n}
	return stream.Attempt(at, func() error { return process(ctx, d.Task, n) })
}

// ReportDiscarded emits a lost event for every task the stream still has
// pending. Call it after a run that stopped early has deleted its queues:
// the deletion discarded whatever messages they held, and no message may
// vanish without an event saying so.
func ReportDiscarded(stream *lab.Stream, actor string) {
	ReportLost(stream, actor, "the run stopped early; deleting its queues discarded the message")
}

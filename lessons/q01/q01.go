// Package q01 is lesson Q01 — fast retry.
//
// Notice: when C fails, the worker puts it straight back at the tail of the
// same queue, so D finishes before C's second attempt (the order changed).
// C is poison: it fails every time and would loop forever, eating the
// worker's time; only the lesson's bound stops it: the lesson drops C and
// says so (the design itself never would).
package q01

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
)

// MaxAttempts bounds the poison loop so the lesson ends; the design
// itself has no bound, which is the point.
const MaxAttempts = 5

var Lesson = lesson.Lesson{
	ID:    "Q01",
	Title: "Fast retry: re-enqueue at the tail",
	Notice: "When C fails, the worker puts it back at the tail of the same queue: D finishes before C's second try. " +
		"C is poison, so it loops forever and eats the worker's time; the lesson's bound drops it after 5 attempts (the design has no bound).",
	InMem:  runQ01,
	Scales: true,
}

func runQ01(ctx context.Context, env *lesson.Env) error {
	sys, queue, _ := lesson.PlanQueue(ctx, env)
	var gaveUp []string
	StartFastRetry(sys, queue, "Sequential-Worker", MaxAttempts, func(actor string, t *inmem.Task) {
		gaveUp = append(gaveUp, t.ID) // only the one worker calls this
		sys.Drop(actor, t, queue.Name(), fmt.Sprintf("the lesson's bound, not the design: %d attempts; fast retry would re-enqueue it forever", MaxAttempts))
	})
	err := sys.Wait(ctx)
	if len(gaveUp) > 0 {
		env.Report(render.Table{
			Title:  "Poison loop",
			Header: []string{"task", "attempts", "what the design would do"},
			Rows:   [][]string{{strings.Join(gaveUp, ", "), fmt.Sprint(MaxAttempts), "re-enqueue forever"}},
			Notes:  []string{"The lesson stopped the loop and dropped the task; the fast-retry design has no bound of its own."},
		})
	}
	return err
}

// StartFastRetry starts the Q01 design on queue: one goroutine, the
// worker, takes each task from the queue's channel in turn and puts a
// failed one straight back at the tail of the same channel. After
// maxAttempts giveUp decides what becomes of the task (the lesson drops it
// and says why; the design itself would loop forever). Call it again with
// another actor for a second worker on the same queue.
func StartFastRetry(sys *inmem.System, queue *inmem.Queue, actor string, maxAttempts int, giveUp func(actor string, t *inmem.Task)) {
	sys.Go(func() { // the worker: a goroutine of its own
		for {
			t, ok := queue.Receive() // <-queue: the oldest task, or wait for one
			if !ok {
				return // the lesson is over
			}
			switch {
			case sys.Attempt(actor, queue, t) == nil: // done with it
			case t.Attempt >= maxAttempts:
				giveUp(actor, t)
			default:
				queue.Requeue(actor, t) // queue <- t: back at the tail, behind D
			}
			sys.Handled() // t is settled before the worker takes the next
		}
	})
}

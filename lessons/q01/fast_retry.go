// Package q01 is lesson Q01 — fast retry.
//
// Notice: when C fails, the worker puts it straight back at the tail of the
// same queue, so D finishes before C's second attempt (the order changed).
// C is poison: it fails every time and would loop forever, eating the
// worker's time; only the lesson's bound stops it, and C ends pending.
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
		"C is poison, so it loops forever and eats the worker's time; the lesson stops it after 5 attempts and C ends pending.",
	InMem:  runQ01,
	Scales: true,
}

func runQ01(ctx context.Context, env *lesson.Env) error {
	sys, queue, _ := lesson.PlanQueue(ctx, env)
	var gaveUp []string
	StartFastRetry(sys, queue, func(t *inmem.Task) {
		gaveUp = append(gaveUp, t.ID) // only the one worker calls this
	})
	err := sys.Wait(ctx)
	if len(gaveUp) > 0 {
		env.Report(render.Table{
			Title:  "Poison loop",
			Header: []string{"task", "attempts", "what the design would do"},
			Rows:   [][]string{{strings.Join(gaveUp, ", "), fmt.Sprint(MaxAttempts), "re-enqueue forever"}},
			Notes:  []string{"The lesson stopped the loop; the fast-retry design has no bound of its own."},
		})
	}
	return err
}

// StartFastRetry starts the Q01 design on queue: one Sequential-Worker that
// puts a failed task straight back at the tail of the same queue. After
// q01MaxAttempts the lesson gives up on the task (giveUp is told) and
// leaves it pending; the design itself would loop forever.
func StartFastRetry(sys *inmem.System, queue *inmem.Queue, giveUp func(*inmem.Task)) {
	sys.Worker("Sequential-Worker", queue, func(t *inmem.Task) {
		if sys.Attempt("Sequential-Worker", queue, t) == nil {
			return
		}
		if t.Attempt >= MaxAttempts {
			giveUp(t)
			return
		}
		queue.Requeue("Sequential-Worker", t)
	})
}

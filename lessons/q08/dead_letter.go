// Package q08 is lesson Q08 — dead-letter queue.
//
// Notice: after its last retry C is no longer dropped. It is parked in
// deadLetterQueue, where it waits for a person to inspect it: its summary
// says dead, not dropped, and the table shows what the DLQ holds at the end.
package q08

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuelab/qlab/lessons/q07"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
)

var Lesson = lesson.Lesson{
	ID:    "Q08",
	Title: "Dead-letter queue instead of dropping",
	Notice: "After its last retry C is parked in deadLetterQueue instead of being dropped: its fate is dead, not dropped, " +
		"and it is still there at the end for someone to inspect and replay.",
	InMem: runQ08,
}

func runQ08(ctx context.Context, env *lesson.Env) error {
	chain := q07.NewChain(ctx, env)
	// Nobody consumes this DLQ: tasks rest there for manual inspection.
	dlq := chain.Sys.HoldingQueue("deadLetterQueue", chain.Room)
	var parked []string // only the Second-Retry-Worker appends
	err := chain.Run(ctx, env, func(actor string, from *inmem.Queue, t *inmem.Task) {
		from.DeadLetter(actor, t, dlq, "failed all retries") // dlq <- t: kept, where dropping lost it
		parked = append(parked, t.ID)
	})
	env.Report(render.Table{
		Title:  "Dead-letter queue at the end",
		Header: []string{"queue", "tasks", "held"},
		Rows:   [][]string{{dlq.Name(), strings.Join(parked, ", "), fmt.Sprint(dlq.Len())}},
		Notes:  []string{"Nothing consumes the DLQ: its tasks wait for a person (inspect, fix, replay)."},
	})
	return err
}

package q24

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/raffle"
)

// The users of part (d): one body cut short for each reading.
const (
	badToDLQ   = "d-bad-dlq"
	badDropped = "d-bad-drop"
)

// malformed is part (d): the seed's "Direct reject to DLQ" and its
// "message discarded", each run on a body cut short.
func malformed(ctx context.Context, env *lesson.Env) error {
	env.Phase("(d) malformed JSON: \"rejected to the DLQ\" and \"discarded\", both run")
	r, err := open(ctx, env, "d", func(string) time.Duration { return 0 })
	if err != nil {
		return err
	}
	defer r.close(ctx)
	bad := func(d *flow.Delivery, err error) flow.Decision {
		if d.Task == badDropped {
			return flow.Drop("discarded, error log only: " + err.Error())
		}
		return toDLQ(d, err)
	}
	c := r.seedConsumer(attemptsReading, bad)
	if err := r.consume(ctx, []flow.Consumer{c}, r.viaAPI(badToDLQ, badDropped)); err != nil {
		return err
	}
	inDLQ, err := r.peekDLQ(ctx, raffle.DLQ)
	if err != nil {
		return err
	}
	env.Report(malformedTable(r, inDLQ))
	return nil
}

// peekDLQ lists the tasks queue holds, read without consuming them; nil
// on a backend that cannot read a queue (flow.Inspector).
func (r *run) peekDLQ(ctx context.Context, queue string) ([]string, error) {
	in, ok := r.b.(flow.Inspector)
	if !ok {
		return nil, nil
	}
	ds, err := in.Peek(ctx, queue, 10)
	var tasks []string
	for _, d := range ds {
		tasks = append(tasks, d.Task)
	}
	return tasks, err
}

func malformedTable(r *run, inDLQ []string) render.Table {
	t := render.Table{
		Title:  "(d) Malformed JSON, both readings of the seed",
		Header: []string{"message", "the seed says", "where it ended", "in raffle_dlq"},
		Notes: []string{
			"Both are never retried: no retry can mend a body. Parked, an operator can read " +
				"the bytes and find the client; discarded, only a log line remembers it. " +
				"The lab parks (Q16 replays a DLQ).",
		},
	}
	for _, c := range [][2]string{{badToDLQ, "Action: direct reject to DLQ"},
		{badDropped, "Recovery: error log, message discarded"}} {
		t.Rows = append(t.Rows, []string{c[0], c[1], r.end(c[0]),
			fmt.Sprint(slices.Contains(inDLQ, c[0]))})
	}
	return t
}

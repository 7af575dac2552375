package q18

import (
	"context"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/seeds/birthday"
)

// Part (a): the seed's cron takes every CREATED row due within the next
// hour, so a row due in 59 minutes goes out at once. The fix publishes a
// row at its due minute: QueueDue(now) instead of QueueDue(now + 1 h).

// dueRows are part (a)'s messages, due across the hour.
func dueRows(prefix string) []row {
	return []row{
		{prefix + "1", "birthday", 1},
		{prefix + "2", "anniversary", 14},
		{prefix + "3", "birthday", 29},
		{prefix + "4", "anniversary", 44},
		{prefix + "5", "birthday", 59},
	}
}

// lastDue is the last minute a row of dueRows is due.
const lastDue = 59

// earlySend runs the seed's look-ahead, then the fix, and reports each
// message's send time against its due time.
func earlySend(ctx context.Context, env *lesson.Env) error {
	env.Phase("(a) E1–E5: the seed's cron publishes what is due within the hour, at once")
	seed, err := runEarly(ctx, env, "early", "E", birthday.Horizon, 0)
	if err != nil {
		return err
	}
	env.Phase("(a) D1–D5: the fix publishes each row at its due minute")
	fix, err := runEarly(ctx, env, "due", "D", 0, lastDue)
	if err != nil {
		return err
	}
	env.Report(earlyTable([]outcome{seed, fix}))
	return nil
}

// runEarly runs a cron that, on minutes 0 … last, queues the CREATED rows
// due within lookAhead and publishes each (the seed's order: QUEUED first).
func runEarly(ctx context.Context, env *lesson.Env, name, prefix string,
	lookAhead time.Duration, last int) (outcome, error) {
	v, err := open(ctx, env, name, dueRows(prefix), atomicClaim, 1)
	if err != nil {
		return outcome{}, err
	}
	defer v.close(ctx)
	tick := func(ctx context.Context) error {
		rows, err := v.db.QueueDue(ctx, v.now().Add(lookAhead))
		for _, r := range rows {
			if err == nil {
				err = v.publish(ctx, birthday.Scheduler, r)
			}
		}
		return err
	}
	if err := v.cron(ctx, last, tick); err != nil {
		return outcome{}, err
	}
	return v.finish(ctx, name)
}

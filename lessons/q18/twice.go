package q18

import (
	"context"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// Part (d): the seed's "Scheduler Runs Twice": the cron publishes a row,
// retries and publishes it again (its confirm was late, say, though the
// broker had the message). Two workers (prefetch 5 each)
// share the queue. With the atomic claim each row is sent once and every
// copy is absorbed; with the seed's check-then-act (read the row, skip it
// if SENT, send, then mark) two copies in two workers' hands both read
// "not SENT" and both send.

// twiceRows are part (d)'s messages, all due at once.
func twiceRows(prefix string) []row {
	return []row{
		{prefix + "1", "birthday", 0},
		{prefix + "2", "anniversary", 0},
		{prefix + "3", "birthday", 0},
		{prefix + "4", "anniversary", 0},
		{prefix + "5", "birthday", 0},
	}
}

// publishAndPause publishes r and takes publishTime over it, as a real
// publish does: the broker's dispatch (and memory's) settles in between.
func (v *variant) publishAndPause(ctx context.Context, r store.Row) error {
	if err := v.publish(ctx, birthday.Scheduler, r); err != nil {
		return err
	}
	return v.clock.Wait(ctx, publishTime)
}

// publishTime is how long one publish takes (lesson time).
const publishTime = 100 * time.Millisecond

// confirmTimeout is how long the scheduler waits for a confirm before it
// publishes again (lesson time). The lab makes every confirm miss it.
const confirmTimeout = time.Second

// twiceWorkers is how many workers consume the queue in part (d).
const twiceWorkers = 2

// twiceCopies is how many times the scheduler publishes each row.
const twiceCopies = 2

// twice runs the double-publishing scheduler against both claims.
func twice(ctx context.Context, env *lesson.Env) error {
	variants := []struct {
		phase, name, prefix string
		w                   worker
	}{
		{"(d) C1–C5: each publish is retried; two workers, the atomic claim",
			"atomic", "C", atomicClaim},
		{"(d) K1–K5: each publish is retried; two workers, check-then-act",
			"check_then_act", "K", checkThenAct},
	}
	var out []outcome
	for _, vr := range variants {
		env.Phase(vr.phase)
		o, err := runTwice(ctx, env, vr.name, vr.prefix, vr.w)
		if err != nil {
			return err
		}
		out = append(out, o)
	}
	env.Report(twiceTable(out))
	return nil
}

// runTwice queues the rows and publishes each twice, the second time when
// its confirm is late: the broker hands the copies to the two workers in
// turn, so each copy lands in the other worker's hands while the first is
// still being sent.
func runTwice(ctx context.Context, env *lesson.Env, name, prefix string,
	w worker) (outcome, error) {
	gated := func(v *variant) { v.gate = newGate(twiceCopies, v.clock) }
	v, err := open(ctx, env, name, twiceRows(prefix), w, twiceWorkers, gated)
	if err != nil {
		return outcome{}, err
	}
	defer v.close(ctx)
	tick := func(ctx context.Context) error {
		rows, err := v.db.QueueDue(ctx, v.now().Add(birthday.Horizon))
		for _, r := range rows {
			if err == nil {
				err = v.publishAndPause(ctx, r)
			}
			if err == nil { // no confirm within confirmTimeout: publish again
				err = v.clock.Wait(ctx, confirmTimeout)
			}
			if err == nil {
				err = v.publishAndPause(ctx, r)
			}
		}
		return err
	}
	if err := v.cron(ctx, 0, tick); err != nil {
		return outcome{}, err
	}
	return v.finish(ctx, name)
}

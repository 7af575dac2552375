package q18

import (
	"context"
	"errors"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// Part (b): the seed's cron writes QUEUED, then publishes. When the
// publish fails the row is QUEUED and nothing will ever publish it: the
// cron picks only CREATED rows. Two fixes, each with the same fault (the
// first publish of row 2 fails):
//
//   - publish first, mark QUEUED after: a failed tick leaves its rows
//     CREATED, the next tick publishes them again, and the worker's atomic
//     claim absorbs the copies that were already out;
//   - a transactional outbox: the cron marks the rows QUEUED and writes
//     an outbox entry for each in one transaction; a relay publishes the
//     entries with confirms and marks each relayed only once confirmed.

// stuckRows are part (b)'s messages, all due at once.
func stuckRows(prefix string) []row {
	return []row{
		{prefix + "1", "birthday", 0},
		{prefix + "2", "anniversary", 0},
		{prefix + "3", "birthday", 0},
		{prefix + "4", "anniversary", 0},
	}
}

// stuckTicks is how many more minutes each variant runs after the fault:
// enough for a cron to pick the row up again if it ever would.
const stuckTicks = 2

// stuckVariant is one order of part (b).
type stuckVariant struct {
	phase, name, prefix string
	w                   worker
	tick                func(v *variant) func(context.Context) error
	library             bool // the seed's amqp-connection-manager takes the fault (buffers the publish)
}

// stuckVariants are the seed's order and the two fixes.
var stuckVariants = []stuckVariant{
	{"(b) Q1–Q4: QUEUED, then publish (the seed); Q2's publish fails",
		"queued_first", "Q", atomicClaim, queuedFirst, false},
	{"(b) P1–P4: publish, then QUEUED; P2's publish fails, the next tick publishes again",
		"publish_first", "P", claimWhenQueued, publishFirst, false},
	{"(b) O1–O4: a transactional outbox and a relay with confirms; O2's publish fails",
		"outbox", "O", atomicClaim, outboxTick, false},
	{"(b) M1–M4: QUEUED, then publish, through amqp-connection-manager; M2 is published " +
		"while the connection is down, and the library holds it until it reconnects",
		"library_buffer", "M", atomicClaim, queuedFirst, true},
}

// stuckQueued runs the seed's order and the two fixes, each with one
// failed publish, and counts what each sent.
func stuckQueued(ctx context.Context, env *lesson.Env) error {
	var out []outcome
	for _, sv := range stuckVariants {
		o, err := runStuck(ctx, env, sv)
		if err != nil {
			return err
		}
		out = append(out, o)
	}
	env.Report(stuckTable(out))
	return nil
}

// runStuck runs one order of part (b): the first publish of row 2 fails,
// and the cron ticks stuckTicks more times.
func runStuck(ctx context.Context, env *lesson.Env, sv stuckVariant) (outcome, error) {
	env.Phase(sv.phase)
	v, err := open(ctx, env, sv.name, stuckRows(sv.prefix), sv.w, 1)
	if err != nil {
		return outcome{}, err
	}
	defer v.close(ctx)
	v.failing[sv.prefix+"2"] = true
	if sv.library {
		v.buffered = birthday.ReconnectTime
	}
	if err := v.cron(ctx, stuckTicks, sv.tick(v)); err != nil {
		return outcome{}, err
	}
	return v.finish(ctx, sv.name)
}

// queuedFirst is the seed's tick: mark every due row QUEUED, then publish
// each. A failed publish is logged and the tick goes on, as the seed's
// loop does; the row it failed is lost.
func queuedFirst(v *variant) func(context.Context) error {
	return func(ctx context.Context) error {
		rows, err := v.db.QueueDue(ctx, v.now().Add(birthday.Horizon))
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := v.publish(ctx, birthday.Scheduler, r); err != nil {
				v.lostAfterQueued(r.ID, err)
			}
		}
		return nil
	}
}

// publishFirst publishes every CREATED row due within the hour and only
// then marks them QUEUED; a failed publish ends the tick before the mark,
// so the next tick publishes all of them again.
func publishFirst(v *variant) func(context.Context) error {
	return func(ctx context.Context) error {
		until := v.now().Add(birthday.Horizon)
		due, err := v.dueCreated(ctx, until)
		if err != nil {
			return err
		}
		for _, r := range due {
			if err := v.publish(ctx, birthday.Scheduler, r); err != nil {
				return ignoreFault(err) // the tick failed: its rows stay CREATED for the next
			}
		}
		_, err = v.db.QueueDue(ctx, until)
		return err
	}
}

// dueCreated is the SELECT … WHERE status='CREATED' AND due <= until of a
// publish-first scheduler, read row by row through the store's Get: the
// contract has no read-only query, and the lesson knows its rows.
func (v *variant) dueCreated(ctx context.Context, until time.Time) ([]store.Row, error) {
	var due []store.Row
	for _, r := range v.rows {
		got, err := v.db.Get(ctx, r.id)
		if err != nil {
			return nil, err
		}
		if got.Status == store.Created && !got.Due.After(until) {
			due = append(due, got)
		}
	}
	return due, nil
}

// outboxTick queues the due rows and their outbox entries in one
// transaction, then runs the relay: publish each pending entry (PublishTo
// waits for the broker's confirm) and mark it relayed; a failed publish
// ends the pass, and the entry waits for the next.
func outboxTick(v *variant) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := v.db.QueueDueToOutbox(ctx, v.now().Add(birthday.Horizon)); err != nil {
			return err
		}
		pending, err := v.db.PendingOutbox(ctx, len(v.rows))
		if err != nil {
			return err
		}
		for _, e := range pending {
			if err := v.publish(ctx, Relay, store.Row{ID: e.ID, Kind: e.Kind}); err != nil {
				return ignoreFault(err) // not relayed: the entry stays pending
			}
			if err := v.db.MarkRelayed(ctx, e.Seq); err != nil {
				return err
			}
		}
		return nil
	}
}

// ignoreFault is nil for the lab's injected publish fault, which the
// scheduler survives, and err for anything else, which ends the run.
func ignoreFault(err error) error {
	if errors.Is(err, errPublish) {
		return nil
	}
	return err
}

package q24

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/raffle"
)

// Part (e)'s numbers, in lesson time.
const (
	// dlqOutage is how long the DB stays away while the DLQ consumer runs.
	dlqOutage = 2 * time.Second
	// hotGuard stops the seed's loop (not the seed's: it has none) so the
	// run ends; the bad message would spin for ever.
	hotGuard = 4 * time.Second
	// hotTries is how often the guard lets the bad message spin at least:
	// on a broker each spin is a round trip of real time (lesson time at
	// the lesson's speed), and on a busy machine 4 s at 20× held one.
	hotTries = 5
)

// dlqRun is one DLQ consumer of part (e) and the two messages it meets.
type dlqRun struct {
	name, bad, user string
	part            string // the users table's name
	consumer        func(r *run) flow.Consumer
}

// The seed's DLQ consumer and the lab's fix.
var (
	seedDLQ = dlqRun{name: "seed: reject + requeue", bad: "e-bad", user: "e-user", part: "e_seed",
		consumer: (*run).requeueing}
	fixedDLQ = dlqRun{name: "fix: 3 tries, 10 s apart, then park", bad: "f-bad", user: "f-user",
		part: "e_fix", consumer: (*run).parking}
)

// dlqLoop is part (e): a user and a bad message sit in raffle_dlq while
// the DB is away for 2 s; the seed's consumer, then the lab's, take them.
func dlqLoop(ctx context.Context, env *lesson.Env) error {
	env.Phase("(e) the DLQ consumer: reject + requeue spins; a bounded count parks")
	var measured []DLQLoad
	for _, c := range []dlqRun{seedDLQ, fixedDLQ} {
		load, err := runDLQ(ctx, env, c)
		if err != nil {
			return err
		}
		measured = append(measured, load)
	}
	env.Report(dlqTable(measured))
	env.Report(librariesTable())
	return nil
}

// DLQLoad is what one DLQ consumer did while the DB was away.
type DLQLoad struct {
	Name                string
	Deliveries          int    // of both messages, over the whole run
	DownDeliveries      int    // deliveries that started while the DB was away
	DownInserts         int    // of those, the ones that reached the DB
	BadEnd, UserEnd     string // where each message ended
	BadTries, UserTries int
	On                  string // the mechanism measured: "RabbitMQ 3.10.8", "in memory"
}

// PerSecond is deliveries a second while the DB was away.
func (l DLQLoad) PerSecond() float64 { return float64(l.DownDeliveries) / dlqOutage.Seconds() }

// InsertsPerSecond is inserts tried a second while the DB was away.
func (l DLQLoad) InsertsPerSecond() float64 { return float64(l.DownInserts) / dlqOutage.Seconds() }

// runDLQ puts c's two messages in raffle_dlq (through raffle_dlx, the way
// the main consumer's rejects arrive) and lets c's consumer take them.
func runDLQ(ctx context.Context, env *lesson.Env, c dlqRun) (DLQLoad, error) {
	r, err := open(ctx, env, c.part, func(string) time.Duration { return dlqOutage })
	if err != nil {
		return DLQLoad{}, err
	}
	defer r.close(ctx)
	publish := r.via("Consumer", raffle.DLX, raffle.DLQ, c.user, c.bad)
	if err := r.consume(ctx, []flow.Consumer{c.consumer(r)}, publish); err != nil {
		return DLQLoad{}, err
	}
	load := DLQLoad{Name: c.name, BadEnd: r.end(c.bad), UserEnd: r.end(c.user),
		On: flow.FactsOf(r.b).On()}
	for _, row := range r.all() {
		load.Deliveries++
		load.BadTries += btoi(row.task == c.bad)
		load.UserTries += btoi(row.task == c.user)
		if row.at < dlqOutage {
			load.DownDeliveries++
			load.DownInserts += btoi(row.insert)
		}
	}
	return load, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// requeueing is the seed's DLQConsumer: insert; on any failure, reject
// with requeue, and the broker hands the message straight back. The lab's
// guard discards what still fails after hotGuard and hotTries tries.
func (r *run) requeueing() flow.Consumer {
	return flow.Consumer{Queue: raffle.DLQ, Actor: "DLQConsumer",
		Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
			err := r.attempt(ctx, d, "DLQConsumer", 0)
			switch {
			case err == nil:
				return flow.Ack()
			case r.since() >= hotGuard && r.tries(d.Task) >= hotTries:
				return flow.Drop(fmt.Sprintf("the lab's guard after %s of requeues "+
					"(the seed's loop has no end): %v", hotGuard, err))
			}
			return flow.Requeue()
		}}
}

// parking is the lab's DLQ consumer: it counts its tries in its own
// qlab-retries header (no x- prefix: Q13), waits raffle.RetryTTL between
// them through a wait queue, parks in raffle_parked after dlqTries, and
// parks a body no retry can mend at once.
func (r *run) parking() flow.Consumer {
	policy := flow.Retries{Via: DLQWait, DLQ: Parked, Max: dlqTries}
	return flow.Consumer{Queue: raffle.DLQ, Actor: "DLQConsumer",
		RetryHeader: rabbit.RetryCountHeader,
		Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
			err := r.attempt(ctx, d, "DLQConsumer", ownRetries(d))
			if errors.Is(err, errMalformed) {
				err = flow.Permanent(err)
			}
			return policy.Decide(d, err)
		}}
}

func dlqTable(loads []DLQLoad) render.Table {
	t := render.Table{
		Title: "(e) The DLQ consumer while the DB is away for 2 s (" + loads[0].On + ")",
		Header: []string{"consumer", "deliveries/s", "inserts/s", "deliveries",
			"bad JSON (tries: end)", "user (tries: end)"},
		Notes: []string{
			"deliveries/s and inserts/s are counted over the 2 s the DB was away. This is " +
				"the lab's consumer: one message at a time, and 50 ms a delivery by the " +
				"lab's choice, so its loop is only as hot as that; the seeds' libraries " +
				"run it far hotter (the next table).",
			"With the lab's one-at-a-time consumer RabbitMQ puts a requeued message back " +
				"at its place, the head: the user loops alone while the DB is away and the " +
				"bad message waits behind it; in memory a requeue goes to the tail and the " +
				"two take turns. The seed's Broadway consumer has the other shape (next " +
				"table): the bad message spins and the user waits.",
			"The seed's bad message can never succeed: only the lab's guard ended it. " +
				"The fix counts in qlab-retries, not x-retries: x- names are the broker's.",
		},
	}
	for _, l := range loads {
		t.Rows = append(t.Rows, []string{l.Name, fmt.Sprintf("%.1f", l.PerSecond()),
			fmt.Sprintf("%.1f", l.InsertsPerSecond()), fmt.Sprint(l.Deliveries),
			fmt.Sprintf("%d: %s", l.BadTries, l.BadEnd),
			fmt.Sprintf("%d: %s", l.UserTries, l.UserEnd)})
	}
	return t
}

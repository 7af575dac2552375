// Package q23 is lesson Q23 — a batching consumer (seed 004, the RaffleAPI).
//
// Notice: the consumer inserts users in batches of up to N or what came
// within T of a batch's first user, whichever is first, with two batchers
// inserting at once. At a low arrival rate every user waits up to T; at a
// high rate the batches fill and nobody waits that long. A batch can only
// fill when the consumer may hold a batch's worth of unacked messages: with
// a prefetch below N every batch waits out T half empty, and that is the
// seed's own case: broadway_rabbitmq asks for a prefetch of 50 when none
// is given, and the seed gives none, so its batch of 1000 never fills.
//
// Then one bad row. The seed inserts a batch in one statement, so one taken
// email (a unique violation) fails the whole insert, and its per-batch error
// handling sends every user of the batch round the retry queue with
// x-retries+1 until all of them sit in the DLQ after 3 attempts. The fix
// settles each message on its own, as Broadway's Message.failed does: an
// insert that skips the conflicting row (ON CONFLICT DO NOTHING, per row),
// the bad user parked with its reason, the rest acked, and only failed rows
// retried.
//
// Why so long: six runs of the batching consumer (two arrival rates, two
// prefetches, the seed's batch insert and the fix), each on a fresh backend
// and users table (part.go), and cost.go measures what a batch insert saves
// on a real database.
package q23

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/raffle"
	"github.com/queuelab/qlab/store"
)

// Lesson is Q23.
var Lesson = lesson.Lesson{
	ID:    "Q23",
	Title: "A batching consumer",
	Notice: "Users are inserted in batches of up to 10 or 1 s, whichever comes first, by 2 batchers: " +
		"at 3 users/s every batch waits out the timer, at 100/s they fill, and with a prefetch of " +
		"4 no batch holds more than 4 (with Broadway's default prefetch of 50 the seed's batch of " +
		"1000 never fills). One taken email fails the seed's whole batch insert, so all 10 users " +
		"go round the retry queue with x-retries+1 and end in the DLQ after 3 attempts. Settled " +
		"one by one, 9 are stored and only the bad one is parked.",
	InMem:      runQ23,
	Rabbit:     runQ23,
	WatchSpeed: 4, // the 10 s retry rounds in 2.5 s
	Length:     28 * time.Second,
	TestSpeed:  20, // the whole lesson (about 40 s) in about 2 s
	Topologies: func() []flow.Topology { return []flow.Topology{raffle.Topology()} },
	Faults:     true, // in the fault suite (lessons/faults)
	Store:      true, // the fault suite cuts its status store's database too
}

// The seed's consumer settings (USERS_BATCH_SIZE, …) and what the lesson
// runs. Only the batch size is scaled: 1000 users a batch would be 1000
// lines a batch in the log.
const (
	SeedBatchSize = 1000
	BatchSize     = 10          // SeedBatchSize scaled by 1/100
	BatchWait     = time.Second // USERS_BATCH_TIMEOUT_MS
	Processors    = 8           // USERS_PROC_CONCURRENCY
	Batchers      = 2           // USERS_BATCH_CONCURRENCY
	MaxAttempts   = 3           // MAX_RETRIES, read as 3 deliveries (the other reading is Q24's)
	// PoisonWait is the batch timeout of parts (c) and (d): a batch sent
	// round the retry queue comes back one message at a time, and a full
	// batch flushes at once, so a long wait costs nothing there and keeps
	// the ten one batch on a busy broker too. The ten republishes go one
	// after another, each awaiting its confirm, so a broker that answers
	// late spreads their return: 5 s (0.25 s real at the test speed) split
	// a batch with two cores busy, and 30 s (1.5 s) once (ci76). 2 min is
	// 6 s real, within the broker watchdog's patience (10 s real) for a
	// batch that cannot fill. It changes no outcome.
	PoisonWait = 2 * time.Minute
	// SmallPrefetch is below BatchSize: part (b)'s consumers.
	SmallPrefetch = 4
	// BroadwayPrefetch is the prefetch_count broadway_rabbitmq asks for
	// when the producer's :qos option gives none (0.8.2,
	// lib/broadway_rabbitmq/amqp_client.ex: `prefetch_count:
	// [type: :non_neg_integer, default: 50]`). The seed gives none, so its
	// batch of SeedBatchSize can never fill: part (b) runs it unscaled.
	BroadwayPrefetch = 50
	// BroadwayUsers is how many users that part queues at once: two
	// windows of BroadwayPrefetch.
	BroadwayUsers = 2 * BroadwayPrefetch
	// SeedRetryHeader is the RaffleAPI's retry counter. It sits in the
	// x- namespace RabbitMQ owns (Q13): 3.10.8 and 4.3.6 leave it alone
	// (compare 23 --broker: the same fates on both), but the broker may
	// give x- headers a meaning of its own, and 4.0 already ignores an
	// x-death a client publishes. The fix uses the lab's own.
	SeedRetryHeader = "x-retries"
)

// Taken is the user already in the table when parts (c) and (d) start:
// their bad row registers the same email again.
var Taken = store.User{ID: "john", Name: "John Silva", Email: "john@email.com"}

// runQ23 runs the lesson's parts on one users table and reports them; on a
// real database it also times a batch insert against single-row ones.
func runQ23(ctx context.Context, env *lesson.Env) error {
	parts := newParts()
	db, err := runstore.Open(ctx, env, "users")
	if err != nil {
		return err
	}
	defer db.Drop()
	if err := runParts(ctx, env, db, parts); err != nil {
		return err
	}
	env.Report(ratesTable(parts[:4], db.Kind))
	env.Report(poisonTable(parts[4:], db.Kind))
	if env.Stream.Backend() == lab.InMem {
		return nil // a map has no transaction to save
	}
	cost, err := MeasureInserts(ctx, db, BenchUsers)
	if err != nil {
		return err
	}
	env.Report(costTable(cost, db.Kind))
	return nil
}

// runParts runs parts in order on the users table db, storing Taken
// before the first poisoned one.
func runParts(ctx context.Context, env *lesson.Env, db store.Users, parts []*part) error {
	taken := false
	for _, p := range parts {
		if p.Poisoned && !taken {
			if err := db.InsertUsers(ctx, []store.User{Taken}); err != nil {
				return err
			}
			taken = true
		}
		env.Phase(p.Title)
		if err := p.run(ctx, env, db); err != nil {
			return err
		}
	}
	return nil
}

// newParts are the lesson's five runs, fresh each call.
func newParts() []*part {
	return []*part{
		{Title: "(a) low rate: 3 users/s", Prefix: "l", Users: 10, Every: 330 * time.Millisecond,
			Seed: true},
		{Title: "(a) high rate: 100 users/s", Prefix: "h", Users: 40, Every: 10 * time.Millisecond,
			Seed: true},
		{Title: fmt.Sprintf("(b) high rate, prefetch %d < batch size %d", SmallPrefetch, BatchSize),
			Prefix: "p", Users: 16, Every: 10 * time.Millisecond, Prefetch: SmallPrefetch, Seed: true},
		{Title: fmt.Sprintf("(b) Broadway's prefetch %d, batch %d", BroadwayPrefetch,
			SeedBatchSize), Prefix: "b", Users: BroadwayUsers,
			Prefetch: BroadwayPrefetch, Batch: SeedBatchSize, Seed: true, OneBatcher: true},
		{Title: "(c) the seed: one taken email fails the whole batch", Prefix: "s",
			Users: BatchSize, Poisoned: true, Seed: true, OneBatcher: true, Wait: PoisonWait},
		{Title: "(d) the fix: each message settled on its own", Prefix: "f", Users: BatchSize,
			Poisoned: true, OneBatcher: true, Wait: PoisonWait},
	}
}

// header is the retry counter a part's consumer republishes with: the
// seed's x-retries, or the lab's own.
func (p *part) header() string {
	if p.Seed {
		return SeedRetryHeader
	}
	return rabbit.RetryCountHeader
}

// policy is the retry budget both handlings share: retry through the 10 s
// queue, park after attempt MaxAttempts, and park at once a permanent
// error (which only the fix can tell apart).
var policy = flow.Retries{Via: raffle.RetryQueue, DLQ: raffle.DLQ, Max: MaxAttempts}

// actor names batcher i.
func actor(i int) string { return fmt.Sprintf("Batcher-%d", i+1) }

// clockOf is the run's lesson clock.
func clockOf(env *lesson.Env) lab.Clock { return env.Stream.Clock() }

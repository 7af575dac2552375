package q23

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/seeds/raffle"
	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
)

// benchUsers is how many users one round of BenchmarkConsumer publishes:
// the seed's batch size, so a batching round is one full batch.
const benchUsers = 1000

// BenchmarkConsumer is issue 23's comparison: the seed's batching consumer
// (batches of up to 1000 or 1 s, one InsertUsers a batch) against a
// consumer that inserts each message as it comes (one transaction a
// user), on one store, SQLite and PostgreSQL (the latter needs
// QLAB_DATABASE_URL; skipped without it, failed under QLAB_REQUIRE_DB=1),
// in one run. Both take the users through the flow seam's in-memory
// backend, so the difference is the consumer's and the database's, not a
// broker's; users/s counts users inserted. Q23's last table prints the
// ratio it measured in the run itself.
//
//	go test -run '^$' -bench Consumer ./lessons/q23/
func BenchmarkConsumer(b *testing.B) {
	for _, db := range []string{"sqlite", "postgres"} {
		for _, how := range []string{"batching", "one-per-message"} {
			b.Run(db+"/"+how, func(b *testing.B) {
				s := openBenchStore(b, db)
				round := 0
				start := time.Now()
				for b.Loop() {
					if err := consumeRound(b.Context(), s, how == "batching", round); err != nil {
						b.Fatal(err)
					}
					round++
				}
				b.ReportMetric(float64(round*benchUsers)/time.Since(start).Seconds(), "users/s")
				n, err := s.CountUsers(b.Context())
				if err != nil || n != round*benchUsers {
					b.Fatalf("the table holds %d users after %d rounds of %d (%v)", n, round, benchUsers, err)
				}
			})
		}
	}
}

// openBenchStore opens a fresh users table on db, dropped when b ends.
func openBenchStore(b *testing.B, db string) *sqlstore.Store {
	cfg := sqlstore.Config{Dir: b.TempDir()}
	if db == "postgres" {
		cfg = sqlstore.Config{URL: sqlstoretest.NeedPostgres(b), Schema: fmt.Sprintf("qlabbench_%d", os.Getpid())}
	}
	s, err := sqlstore.Open(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Drop(context.Background()) })
	return s
}

// consumeRound publishes benchUsers users (round r's) at once on a fresh
// in-memory backend and waits until the consumer inserted them all.
func consumeRound(ctx context.Context, db store.Users, batching bool, r int) error {
	users := map[string]store.User{}
	for i := range benchUsers {
		id := fmt.Sprintf("r%d-u%04d", r, i)
		users[id] = store.User{ID: id, Name: "User " + id, Email: id + "@raffle.test"}
	}
	l := Lesson
	// Lesson time runs 1000× real time: the batch's 1 s timeout never holds
	// up a round (a full batch flushes at once anyway).
	const speed = 1000
	l.InMem = func(ctx context.Context, env *lesson.Env) error {
		bk, err := env.Open(ctx)
		if err != nil {
			return err
		}
		defer env.Close(ctx, bk)
		if err := env.Declare(ctx, bk, raffle.Topology()); err != nil {
			return err
		}
		if err := startBenchConsumer(ctx, bk, db, users, batching); err != nil {
			return err
		}
		for id := range users {
			if err := bk.PublishTo(ctx, "RaffleAPI", raffle.Exchange, raffle.Queue, id); err != nil {
				return err
			}
		}
		return bk.Wait(ctx)
	}
	_, err := lesson.Run(ctx, l, lesson.Options{Backend: lab.InMem, Speed: speed})
	return err
}

// startBenchConsumer starts the seed's batcher (BatchSize is the lesson's
// scaled 10; the bench uses the seed's 1000) or a consumer that inserts
// each message on its own; a failed insert fails the round.
func startBenchConsumer(ctx context.Context, bk flow.Backend, db store.Users,
	users map[string]store.User, batching bool) error {
	c := flow.Consumer{Queue: raffle.Queue, Actor: "Batcher-1", Prefetch: benchUsers}
	if !batching {
		c.Actor, c.Prefetch = "Consumer-1", 1
		c.Handle = func(ctx context.Context, d *flow.Delivery) flow.Decision {
			if err := db.InsertUsers(ctx, []store.User{users[d.Task]}); err != nil {
				return flow.Park(raffle.DLQ, err.Error())
			}
			return flow.Ack()
		}
		return bk.Consume(ctx, c)
	}
	batcher, ok := bk.(flow.Batcher)
	if !ok {
		return fmt.Errorf("%s cannot deliver in batches", bk.Kind())
	}
	return batcher.ConsumeBatch(ctx, c, flow.Batch{Size: benchUsers, Wait: time.Second, KeepPrefetch: true,
		Handle: func(ctx context.Context, ds []*flow.Delivery) []flow.Decision {
			batch := make([]store.User, len(ds))
			for i, d := range ds {
				batch[i] = users[d.Task]
			}
			err := db.InsertUsers(ctx, batch)
			decs := make([]flow.Decision, len(ds))
			for i := range decs {
				decs[i] = flow.Ack()
				if err != nil {
					decs[i] = flow.Park(raffle.DLQ, err.Error())
				}
			}
			return decs
		}})
}

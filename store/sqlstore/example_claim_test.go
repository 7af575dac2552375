package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
)

// The status store in a lesson (README "Writing a lesson"): a map in
// memory, SQLite in the run's temp dir on the broker (PostgreSQL when
// QLAB_DATABASE_URL names one), and a handler that sends a message only
// if its claim wins. The same row arrives twice; it is sent once.
func Example_claimInAHandler() {
	ctx := context.Background()
	rec := &lab.Recorder{}
	stream := lab.NewStream("example", lab.InMem, lab.NewClock(1), rec)
	var b flow.Backend = inmem.NewFlow(ctx, stream, 16)
	_ = b.Declare(ctx, flow.Topology{Queues: []flow.Queue{
		{Name: "birthday.queue", Role: flow.Work, DeadLetterTo: "birthday.dlq"},
		{Name: "birthday.dlq", Role: flow.DLQ},
	}})

	// The store a broker run opens (SQLite in a temp dir); the flow here
	// is in memory so that the example runs anywhere.
	db, closeDB, err := openStore(ctx, lab.Rabbit)
	if err != nil {
		fmt.Println(err) // one line, no password: wraps store.ErrUnavailable
		return
	}
	defer closeDB()
	send := func(d *flow.Delivery) error {
		fmt.Println("sent", d.Task)
		return nil
	}

	_ = b.Consume(ctx, flow.Consumer{Queue: "birthday.queue", Actor: "Worker",
		Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
			won, err := db.Claim(ctx, d.Task) // QUEUED → SENDING, one winner
			if err != nil {
				return flow.Park("birthday.dlq", err.Error())
			}
			if !won { // another copy has it, or it was sent
				dup := d.Event("Worker")
				dup.Kind = lab.Duplicate
				stream.Emit(dup)
				return flow.Ack()
			}
			attempt := func() error { return send(d) }
			if err := stream.Attempt(d.Event("Worker"), attempt); err != nil {
				_ = db.MarkFailed(ctx, d.Task, err.Error())
				return flow.Park("birthday.dlq", err.Error())
			}
			if err := db.MarkSent(ctx, d.Task); err != nil {
				return flow.Park("birthday.dlq", err.Error())
			}
			return flow.Ack()
		}})

	_, _ = db.Insert(ctx, store.Row{ID: "ana", Kind: "birthday"})
	_, _ = db.QueueDue(ctx, time.Now()) // CREATED → QUEUED: due now
	for range 2 {                       // a scheduler that ran twice
		_ = b.Publish(ctx, "Scheduler", "birthday.queue", "ana")
	}
	_ = b.Wait(ctx)
	row, _ := db.Get(ctx, "ana")
	fmt.Println(row.ID, row.Status, "attempts", row.Attempts)
	// Output:
	// sent ana
	// ana SENT attempts 1
}

// openStore is the status store of a run on backend kind: a map in
// memory; on the broker, SQLite in a temp dir of the run's own, removed
// with the store, or PostgreSQL when sqlstore.EnvURL names one.
func openStore(ctx context.Context, kind lab.Backend) (store.Store, func(), error) {
	if kind == lab.InMem {
		return store.NewMemory(), func() {}, nil
	}
	dir, err := os.MkdirTemp("", "qlab-run-")
	if err != nil {
		return nil, nil, err
	}
	// A schema of the run's own on PostgreSQL (a shared database): Drop
	// removes it, or the SQLite file, when the run is done.
	schema := fmt.Sprintf("qlab_example_%08x", rand.Uint32())
	db, err := sqlstore.Open(ctx, sqlstore.Config{URL: os.Getenv(sqlstore.EnvURL), Dir: dir, Schema: schema})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return db, func() { _ = errors.Join(db.Drop(ctx), os.RemoveAll(dir)) }, nil
}

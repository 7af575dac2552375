package inmem_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// A batch consumer (README "Writing a lesson"): up to 3 mails or 1 s,
// whichever first; each mail gets its own decision from the shared retry
// policy, settled on its own. The backend is asked for the capability,
// never assumed to have it.
func Example_batchConsumer() {
	ctx := context.Background()
	rec := &lab.Recorder{}
	stream := lab.NewStream("example", lab.InMem, lab.NewClock(1), rec)
	var b flow.Backend = inmem.NewFlow(ctx, stream, 16)
	_ = b.Declare(ctx, flow.Topology{Queues: []flow.Queue{
		{Name: "email.queue", Role: flow.Work, DeadLetterTo: "email.wait"},
		{Name: "email.wait", Role: flow.Wait, TTL: 100 * time.Millisecond, DeadLetterTo: "email.queue"},
		{Name: "email.dlq", Role: flow.DLQ},
	}})

	batcher, ok := b.(flow.Batcher)
	if !ok {
		fmt.Println(b.Kind(), "cannot deliver in batches")
		return
	}
	policy := flow.Retries{Via: "email.wait", DLQ: "email.dlq", Max: 2}
	send := func(d *flow.Delivery) error {
		if d.Task == "bounce" {
			return flow.Permanent(errors.New("550 no such mailbox"))
		}
		if d.Task == "slow" && d.Attempt == 1 {
			return errors.New("timeout")
		}
		return nil
	}
	_ = batcher.ConsumeBatch(ctx, flow.Consumer{Queue: "email.queue", Actor: "Batcher"}, flow.Batch{
		Size: 3, Wait: time.Second,
		Handle: func(_ context.Context, ds []*flow.Delivery) []flow.Decision {
			decs := make([]flow.Decision, len(ds))
			for i, d := range ds {
				err := stream.Attempt(d.Event("Batcher"), func() error { return send(d) })
				decs[i] = policy.Decide(d, err)
			}
			fmt.Println("batch of", len(ds))
			return decs
		},
	})
	for _, id := range []string{"hello", "slow", "bounce", "welcome"} {
		_ = b.Publish(ctx, "Producer", "email.queue", id)
	}
	_ = b.Wait(ctx)
	for _, t := range stream.Finish() {
		fmt.Println(t.ID, t.Fate)
	}
	// Output:
	// batch of 3
	// batch of 2
	// hello done
	// slow done
	// bounce dead
	// welcome done
}

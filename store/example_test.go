package store_test

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/store"
)

// The seed 003 worker's idempotency, on the map: the scheduler queues what
// is due, two workers get the same message (a redelivery, or a scheduler
// that ran twice), and only the one that wins the claim sends it.
func Example() {
	ctx := context.Background()
	s := store.NewMemory()
	due := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	s.Insert(ctx, store.Row{ID: "ana-birthday", Kind: "birthday", Due: due})

	queued, _ := s.QueueDue(ctx, due.Add(time.Hour))
	fmt.Println("queued:", queued[0].ID, queued[0].Status)

	for _, worker := range []string{"w1", "w2"} {
		won, _ := s.Claim(ctx, "ana-birthday")
		if !won {
			fmt.Println(worker, "skips it: already claimed")
			continue
		}
		fmt.Println(worker, "sends it")
		s.MarkSent(ctx, "ana-birthday")
	}
	counts, _ := s.Counts(ctx)
	fmt.Println("SENT:", counts[store.Sent])
	// Output:
	// queued: ana-birthday QUEUED
	// w1 sends it
	// w2 skips it: already claimed
	// SENT: 1
}

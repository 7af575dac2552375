//go:build qlabex

// Wrong: the seed: one taken email fails the insert, and the whole batch is retried with it until all of it is parked.
// First failure: a taken email is parked at once, the email in the reason

package batchsettle

import (
	"context"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/store"
)

func InsertBatch(ctx context.Context, users store.Users, ds []*flow.Delivery) []flow.Decision {
	batch := make([]store.User, len(ds))
	for i, d := range ds {
		batch[i] = UserOf(d)
	}
	err := users.InsertUsers(ctx, batch)
	policy := flow.Retries{Via: RetryQueue, DLQ: DLQ, Max: MaxAttempts}
	decs := make([]flow.Decision, len(ds))
	for i, d := range ds {
		decs[i] = policy.Decide(d, err) // the batch's error is every message's
	}
	return decs
}

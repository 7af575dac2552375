//go:build qlabex

// Wrong: a failed insert parks the whole batch at once (Broadway's default when handle_batch fails): the healthy users with the bad one.
// First failure: one bad row does not fail its batch: the others are stored and acked

package batchsettle

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/store"
)

func InsertBatch(ctx context.Context, users store.Users, ds []*flow.Delivery) []flow.Decision {
	batch := make([]store.User, len(ds))
	for i, d := range ds {
		batch[i] = UserOf(d)
	}
	err := users.InsertUsers(ctx, batch)
	decs := make([]flow.Decision, len(ds))
	for i, d := range ds {
		switch {
		case err == nil:
			decs[i] = flow.Ack()
		case errors.Is(err, store.ErrDuplicate) || d.Attempt >= MaxAttempts:
			decs[i] = flow.Park(DLQ, fmt.Sprintf("the batch failed: %v", err))
		default:
			decs[i] = flow.Retry(RetryQueue, err)
		}
	}
	return decs
}

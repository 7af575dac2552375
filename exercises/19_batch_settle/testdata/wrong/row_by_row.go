//go:build qlabex

// Wrong: one insert per user: each settled on its own, but a batch of 10 is 10 round trips, and batching buys nothing.
// First failure: a batch with no bad row is one insert statement

package batchsettle

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/store"
)

func InsertBatch(ctx context.Context, users store.Users, ds []*flow.Delivery) []flow.Decision {
	decs := make([]flow.Decision, len(ds))
	for i, d := range ds {
		u := UserOf(d)
		err := users.InsertUsers(ctx, []store.User{u})
		switch {
		case err == nil:
			decs[i] = flow.Ack()
		case errors.Is(err, store.ErrDuplicate):
			decs[i] = flow.Park(DLQ, fmt.Sprintf("email %s is taken", u.Email))
		case d.Attempt >= MaxAttempts:
			decs[i] = flow.Park(DLQ, fmt.Sprintf("gave up after %d attempts: %v", d.Attempt, err))
		default:
			decs[i] = flow.Retry(RetryQueue, err)
		}
	}
	return decs
}

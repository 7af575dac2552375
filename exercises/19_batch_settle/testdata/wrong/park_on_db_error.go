//go:build qlabex

// Wrong: every error parks at once, the database away too: a retry would have stored them.
// First failure: the database away: the whole batch retries, parked after 3 attempts

package batchsettle

import (
	"context"
	"fmt"
	"slices"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/store"
)

func InsertBatch(ctx context.Context, users store.Users, ds []*flow.Delivery) []flow.Decision {
	batch := make([]store.User, len(ds))
	for i, d := range ds {
		batch[i] = UserOf(d)
	}
	skipped, err := users.InsertUsersSkipping(ctx, batch)
	decs := make([]flow.Decision, len(ds))
	for i := range ds {
		switch {
		case err != nil:
			decs[i] = flow.Park(DLQ, fmt.Sprintf("insert failed: %v", err))
		case slices.Contains(skipped, i):
			decs[i] = flow.Park(DLQ, fmt.Sprintf("email %s is taken", batch[i].Email))
		default:
			decs[i] = flow.Ack()
		}
	}
	return decs
}

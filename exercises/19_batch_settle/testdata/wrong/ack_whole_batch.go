//go:build qlabex

// Wrong: the insert fails and every user of the batch is acked anyway: the healthy users are lost.
// First failure: an acked user is in the users table: nothing acked that was not stored

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
	_ = users.InsertUsers(ctx, batch) // "the bad row is logged; move on"
	decs := make([]flow.Decision, len(ds))
	for i := range ds {
		decs[i] = flow.Ack()
	}
	return decs
}

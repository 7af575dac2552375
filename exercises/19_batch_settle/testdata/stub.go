//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package batchsettle

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/store"
)

// InsertBatch is the batcher's handle_batch: ds is one batch of up to
// BatchSize messages from Queue, each carrying a user (UserOf). Insert
// them into users and return one decision per message, in the order of
// ds:
//   - a stored user: flow.Ack();
//   - a user whose id or email is taken: no retry can store it, so park it
//     in DLQ at once, its email in the reason;
//   - the database away (an error that is not about one row): retry via
//     RetryQueue, or park in DLQ, saying why, once d.Attempt reaches
//     MaxAttempts.
//
// A batch with no bad row is one insert statement.
func InsertBatch(ctx context.Context, users store.Users, ds []*flow.Delivery) []flow.Decision {
	// TODO: this is the seed's batcher: one taken email fails the insert,
	//       and the whole batch goes round the retry queue with it, three
	//       times, into the DLQ. Settle each message on its own: an insert
	//       that skips the rows whose id or email is taken
	//       (users.InsertUsersSkipping says which) lets you ack the rest.
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
		case d.Attempt >= MaxAttempts:
			decs[i] = flow.Park(DLQ, fmt.Sprintf("attempt %d of %d: %v", d.Attempt, MaxAttempts, err))
		default:
			decs[i] = flow.Retry(RetryQueue, err)
		}
	}
	return decs
}

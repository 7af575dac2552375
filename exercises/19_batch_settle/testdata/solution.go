//go:build qlabex

package batchsettle

import (
	"context"
	"fmt"
	"slices"

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
	batch := make([]store.User, len(ds))
	for i, d := range ds {
		batch[i] = UserOf(d)
	}
	// ON CONFLICT DO NOTHING, per row: one statement, and the taken rows say
	// which they are instead of failing the rest.
	skipped, err := users.InsertUsersSkipping(ctx, batch)
	decs := make([]flow.Decision, len(ds))
	for i, d := range ds {
		switch {
		case err != nil && d.Attempt >= MaxAttempts: // the database, not a row: every message failed
			decs[i] = flow.Park(DLQ, fmt.Sprintf("gave up after %d attempts: %v", d.Attempt, err))
		case err != nil:
			decs[i] = flow.Retry(RetryQueue, err)
		case slices.Contains(skipped, i): // Broadway's Message.failed: this one, not its batch
			decs[i] = flow.Park(DLQ, fmt.Sprintf("id %s or email %s is taken: no retry can store it",
				batch[i].ID, batch[i].Email))
		default:
			decs[i] = flow.Ack()
		}
	}
	return decs
}

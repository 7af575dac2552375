//go:build qlabex

package survivor

import (
	"context"
	"errors"

	"github.com/queuelab/qlab/store"
)

// Handle is the surviving worker's handling of delivery d. db is the
// status store (Claim: QUEUED → SENDING for exactly one caller; Get;
// Requeue: SENDING → QUEUED; MarkSent: SENDING → SENT). Return nil once
// the message is dealt with (sent, or rightly left alone); an error parks
// it in the dead-letter queue.
//
//   - QUEUED: claim it, send it, mark it SENT;
//   - SENT: skip it (return nil without sending): the idempotency check;
//   - SENDING and d.Redelivered: its worker died after the claim, before
//     or after the send, and nothing says which: take it over and send;
//   - SENDING, not redelivered: a live worker holds it: skip it.
func Handle(ctx context.Context, db store.Statuses, d Delivery, send Send) error {
	won, err := db.Claim(ctx, d.ID)
	if err != nil {
		return err
	}
	if !won {
		if won, err = takeOver(ctx, db, d); err != nil || !won {
			return err // SENT, or SENDING in a live worker's hands: leave it
		}
	}
	if err := send(ctx); err != nil {
		return errors.Join(err, db.Requeue(ctx, d.ID, err.Error()))
	}
	return db.MarkSent(ctx, d.ID)
}

// takeOver claims a row left SENDING by a worker that died: only a
// redelivered message says its worker is gone. The row goes back to
// QUEUED and this worker claims it again, counting the attempt.
func takeOver(ctx context.Context, db store.Statuses, d Delivery) (bool, error) {
	r, err := db.Get(ctx, d.ID)
	if err != nil || r.Status != store.Sending || !d.Redelivered {
		return false, err
	}
	if err := db.Requeue(ctx, d.ID, "redelivered while SENDING: its worker died"); err != nil {
		return false, err
	}
	return db.Claim(ctx, d.ID)
}

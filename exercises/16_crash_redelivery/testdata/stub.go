//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package survivor

import (
	"context"

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
	// TODO: ask the store before sending. As it is, every redelivered
	//       message is sent again, the SENT ones too.
	//   - won, err := db.Claim(ctx, d.ID): true means this delivery owns
	//     the row (it was QUEUED): send, then db.MarkSent;
	//   - not won: db.Get says why. Skipping everything that is not QUEUED
	//     loses the message the dead worker claimed and never sent.
	return send(ctx)
}

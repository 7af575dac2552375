//go:build qlabex

// Wrong: the seed's check alone: anything the claim does not win is
// skipped, so the message the dead worker claimed and never sent stays
// SENDING for ever, never sent.
// First failure: nothing lost: every task ends done

package survivor

import (
	"context"

	"github.com/queuelab/qlab/store"
)

func Handle(ctx context.Context, db store.Statuses, d Delivery, send Send) error {
	won, err := db.Claim(ctx, d.ID)
	if err != nil || !won {
		return err
	}
	if err := send(ctx); err != nil {
		return err
	}
	return db.MarkSent(ctx, d.ID)
}

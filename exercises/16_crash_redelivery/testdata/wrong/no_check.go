//go:build qlabex

// Wrong: no idempotency check: it claims when it can, but sends whatever
// the claim said, so a redelivered message already SENT goes out again.
// First failure: a redelivered message whose row is SENT is skipped, not sent again

package survivor

import (
	"context"
	"errors"

	"github.com/queuelab/qlab/store"
)

func Handle(ctx context.Context, db store.Statuses, d Delivery, send Send) error {
	if _, err := db.Claim(ctx, d.ID); err != nil {
		return err
	}
	if err := send(ctx); err != nil {
		return err
	}
	if err := db.MarkSent(ctx, d.ID); err != nil && !errors.Is(err, store.ErrNotSending) {
		return err
	}
	return nil
}

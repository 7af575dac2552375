//go:build qlabex

// Wrong: takes over every SENDING row, redelivered or not: the copy of a
// message a live worker is sending right now is sent a second time.
// First failure: a copy not redelivered whose row a live worker holds SENDING is left to it

package survivor

import (
	"context"

	"github.com/queuelab/qlab/store"
)

func Handle(ctx context.Context, db store.Statuses, d Delivery, send Send) error {
	won, err := db.Claim(ctx, d.ID)
	if err != nil {
		return err
	}
	if !won {
		r, err := db.Get(ctx, d.ID)
		if err != nil || r.Status != store.Sending {
			return err
		}
		if err := db.Requeue(ctx, d.ID, "taking it over"); err != nil {
			return err
		}
		if won, err = db.Claim(ctx, d.ID); err != nil || !won {
			return err
		}
	}
	if err := send(ctx); err != nil {
		return err
	}
	return db.MarkSent(ctx, d.ID)
}

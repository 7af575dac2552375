//go:build qlabex

// Wrong: an atomic claim, but a failed send leaves the row SENDING: the
// message comes back, finds it claimed and is skipped, never sent.
// First failure: nothing lost: every task ends done

package atomicclaim

import "context"

func Handle(ctx context.Context, db DB, id string, send Send) error {
	res, err := db.ExecContext(ctx,
		`UPDATE status SET status = 'SENDING' WHERE id = ? AND status = 'QUEUED'`, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	if err := send(ctx); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx,
		`UPDATE status SET status = 'SENT' WHERE id = ? AND status = 'SENDING'`, id)
	return err
}

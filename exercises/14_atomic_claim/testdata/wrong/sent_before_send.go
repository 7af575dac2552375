//go:build qlabex

// Wrong: an atomic claim, but the row is marked SENT before the send: a
// send that fails leaves it SENT, and no delivery sends it again.
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
	if _, err := db.ExecContext(ctx,
		`UPDATE status SET status = 'SENT' WHERE id = ? AND status = 'SENDING'`, id); err != nil {
		return err
	}
	if err := send(ctx); err != nil {
		_, _ = db.ExecContext(ctx,
			`UPDATE status SET status = 'QUEUED' WHERE id = ? AND status = 'SENDING'`, id)
		return err
	}
	return nil
}

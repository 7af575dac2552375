//go:build qlabex

// Wrong: the claim has no status guard (WHERE id = ? alone): it affects
// one row whatever the status, so every copy wins, a SENT one too.
// First failure: a copy of a message already SENT is skipped, not sent again

package atomicclaim

import "context"

func Handle(ctx context.Context, db DB, id string, send Send) error {
	res, err := db.ExecContext(ctx, `UPDATE status SET status = 'SENDING' WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	if err := send(ctx); err != nil {
		_, _ = db.ExecContext(ctx,
			`UPDATE status SET status = 'QUEUED' WHERE id = ? AND status = 'SENDING'`, id)
		return err
	}
	_, err = db.ExecContext(ctx,
		`UPDATE status SET status = 'SENT' WHERE id = ? AND status = 'SENDING'`, id)
	return err
}

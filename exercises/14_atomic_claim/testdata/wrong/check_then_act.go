//go:build qlabex

// Wrong: the seed's check-then-act: SELECT the status, and if it is QUEUED,
// UPDATE the row by id. Two copies both read QUEUED before either writes.
// First failure: two copies at once: exactly one claim wins, the other copy is skipped

package atomicclaim

import "context"

func Handle(ctx context.Context, db DB, id string, send Send) error {
	var status string
	if err := db.QueryRowContext(ctx,
		`SELECT status FROM status WHERE id = ?`, id).Scan(&status); err != nil {
		return err
	}
	if status != "QUEUED" {
		return nil
	}
	if _, err := db.ExecContext(ctx,
		`UPDATE status SET status = 'SENDING' WHERE id = ?`, id); err != nil {
		return err
	}
	if err := send(ctx); err != nil {
		_, _ = db.ExecContext(ctx, `UPDATE status SET status = 'QUEUED' WHERE id = ?`, id)
		return err
	}
	_, err := db.ExecContext(ctx, `UPDATE status SET status = 'SENT' WHERE id = ?`, id)
	return err
}

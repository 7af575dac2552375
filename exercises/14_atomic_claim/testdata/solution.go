//go:build qlabex

package atomicclaim

import (
	"context"
	"errors"
)

// Handle is one delivery of birthday message id. Its row in db is QUEUED
// until a worker claims it. Send it only if this delivery claims the row,
// and record what became of it:
//
//   - the claim: QUEUED → SENDING, won by exactly one copy however many
//     arrive at once; a copy that does not win does nothing and returns
//     nil (another copy has it, or it is SENT already);
//   - after a send that worked: SENDING → SENT, return nil;
//   - after a send that failed: SENDING → QUEUED again and return the
//     error: the message comes back and the next delivery claims it.
func Handle(ctx context.Context, db DB, id string, send Send) error {
	// The check and the change in one statement: of any number of copies
	// running it at once, the database lets exactly one find the row QUEUED.
	res, err := db.ExecContext(ctx,
		`UPDATE status SET status = 'SENDING', attempts = attempts + 1
		 WHERE id = ? AND status = 'QUEUED'`, id)
	if err != nil {
		return err
	}
	won, err := res.RowsAffected()
	if err != nil || won == 0 {
		return err // another copy has it, or it is SENT: nothing to do
	}
	if err := send(ctx); err != nil {
		_, back := db.ExecContext(ctx,
			`UPDATE status SET status = 'QUEUED', last_error = ?
			 WHERE id = ? AND status = 'SENDING'`, err.Error(), id)
		return errors.Join(err, back)
	}
	_, err = db.ExecContext(ctx,
		`UPDATE status SET status = 'SENT' WHERE id = ? AND status = 'SENDING'`, id)
	return err
}

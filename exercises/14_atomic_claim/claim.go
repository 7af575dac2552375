//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package atomicclaim

import "context"

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
	// TODO: claim the row before sending. As it is, every copy sends:
	//       the scheduler's duplicate greets the customer twice.
	//   - one statement: UPDATE status SET status = 'SENDING' … WHERE
	//     the id matches AND the row is still QUEUED; res.RowsAffected()
	//     is 1 for the copy that won, 0 for every other;
	//   - a SELECT first (check, then act) lets two copies both read
	//     QUEUED before either writes: the WHERE clause must do the check;
	//   - mark SENT only once send returned nil; on an error put the row
	//     back to QUEUED (only if it is SENDING) and return the error.
	return send(ctx)
}

//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package idempotent

// Handle is one delivery of task: it sends the task's email. The broker
// may deliver the same task again — after a failure, and after a
// delivery that worked but whose ack was lost — and the customer must get
// exactly one email however often Handle runs.
//
// A failure can strike between any two of your calls to mail or db, as a
// process that dies does: right after the mail server sent the email
// (before you wrote that down), or right after you wrote something
// (before the email went out). From that point on nothing of this
// delivery happens, not even a clean-up, and the broker delivers the task
// again. Only what the mail server and db hold survives.
func Handle(task string, mail MailServer, db Store) error {
	// TODO: make this safe to run twice. As it is, every delivery sends
	//       again: a retry after a failure sends a second email.
	//   1. a task already done is answered from db, without asking the
	//      mail server again (db.Get);
	//   2. send with an idempotency key that is the same on every delivery
	//      of the task, so a send repeated after a failure is answered by
	//      the mail server instead of sent;
	//   3. then store the result (db.Put), so step 1 finds it.
	//   Marking the task first and sending after loses the email when the
	//   failure strikes in between: think about which order survives.
	_, err := mail.Send(task, "")
	return err
}

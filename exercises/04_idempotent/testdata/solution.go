//go:build qlabex

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
	if _, done := db.Get("sent:" + task); done {
		return nil // a repeat: the stored result answers it
	}
	// The task id is the key: a send repeated after a failure (the result
	// not stored yet) is answered by the mail server, not sent again.
	msg, err := mail.Send(task, task)
	if err != nil {
		return err
	}
	return db.Put("sent:"+task, msg)
}

//go:build qlabex

// Wrong: marks the task sent before sending; a failure in between loses
// the email.
// First failure: a task that ends done had its email sent (none lost silently)

package idempotent

func Handle(task string, mail MailServer, db Store) error {
	if _, done := db.Get("sent:" + task); done {
		return nil
	}
	if err := db.Put("sent:"+task, "pending"); err != nil {
		return err
	}
	_, err := mail.Send(task, task)
	return err
}

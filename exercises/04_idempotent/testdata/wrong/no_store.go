//go:build qlabex

// Wrong: sends on every delivery, with no stored result and no key.
// First failure: no customer gets an email twice

package idempotent

func Handle(task string, mail MailServer, db Store) error {
	_, err := mail.Send(task, "")
	return err
}

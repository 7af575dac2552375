package inmem

import (
	"fmt"
	"time"

	"github.com/queuelab/qlab/lab"
)

// Mail is one message a Mailer sends.
type Mail struct {
	To, Subject, Body string
}

// Mailer is a mock mail service: sending a mail emits an alerted event
// (or, for a customer's mail, a mailed one) carrying the rendered mail and
// touches no network.
type Mailer struct {
	Stream *lab.Stream
	Actor  string // defaults to "MockEmailService"
	// Customer says the mails are the work itself (a customer's scheduled
	// mail): Send emits mailed. False: they are alerts to an operator.
	Customer bool
	// Latency is the lesson time one Send takes, as a real mail API would
	// (zero: instant). Send reports the mail, then blocks its caller that
	// long; this is why slow mailing belongs in its own worker.
	Latency time.Duration
}

// Send "sends" mail about task: it reports the mail as an event as the
// sending starts, then takes Latency of lesson time.
func (m Mailer) Send(task string, mail Mail) {
	defer m.Stream.Clock().Sleep(m.Latency)
	actor := m.Actor
	if actor == "" {
		actor = "MockEmailService"
	}
	note := fmt.Sprintf("To: %s\nSubject: %s\nBody: %s", mail.To, mail.Subject, mail.Body)
	kind := lab.Alerted
	if m.Customer {
		kind = lab.Mailed
	}
	m.Stream.Emit(lab.Event{Kind: kind, Task: task, Actor: actor, Note: note})
}

// DLQAlert is the alert mail for a task that failed all its retries.
func DLQAlert(task string) Mail {
	return Mail{
		To:      "admin@example.com",
		Subject: "DLQ Alert: Task Failed",
		Body:    "The following task failed all retries: " + task,
	}
}

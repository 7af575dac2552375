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
// carrying the rendered mail and touches no network.
type Mailer struct {
	Stream *lab.Stream
	Actor  string // defaults to "MockEmailService"
	// Latency is the lesson time one Send takes, as a real mail API would
	// (zero: instant). Send reports the mail, then blocks its caller that
	// long; this is why slow mailing belongs in its own worker.
	Latency time.Duration
}

// Send "sends" mail about task: it reports the mail as an alerted event
// as the sending starts, then takes Latency of lesson time.
func (m Mailer) Send(task string, mail Mail) {
	defer m.Stream.Clock().Sleep(m.Latency)
	actor := m.Actor
	if actor == "" {
		actor = "MockEmailService"
	}
	note := fmt.Sprintf("To: %s\nSubject: %s\nBody: %s", mail.To, mail.Subject, mail.Body)
	m.Stream.Emit(lab.Event{Kind: lab.Alerted, Task: task, Actor: actor, Note: note})
}

// DLQAlert is the alert mail for a task that failed all its retries.
func DLQAlert(task string) Mail {
	return Mail{
		To:      "admin@example.com",
		Subject: "DLQ Alert: Task Failed",
		Body:    "The following task failed all retries: " + task,
	}
}

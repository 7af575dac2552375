package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queuelab/qlab/lessons/q11"
)

// MaxBody is the largest request body the API reads; a larger one is a
// 413. A user or a mail request is a few hundred bytes.
const MaxBody = 16 << 10

// The limits on a request's fields.
const (
	maxName    = 200 // runes
	maxEmail   = 254 // bytes, the longest address SMTP carries
	maxSubject = 200 // runes
	// A scheduledTime further back than pastGrace is refused (a typo, a
	// wrong zone); within it the mail is due and goes out at once, as the
	// seed does for delay <= 0. One further ahead than maxAhead is refused:
	// Q11's router would carry it round its 8 s level queue for days.
	pastGrace = time.Minute
	maxAhead  = 24 * time.Hour
)

// User is seed 004's user: the request body of POST /api/v1/users and,
// with the id the API gives it, the message body on raffle_queue.
type User struct {
	ID    string `json:"id,omitempty"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// userMessage is a user as it travels on raffle_queue: the seed's
// {id, name, email} and the lab's "task", the message id. Every reader of
// the run's queues, the run's own clean-up included, takes a body without
// it for a stranger's (rabbit.TaskProblem) and moves it to the run's hold
// queue: Ctrl-C then kept the run's own users in <prefix>.foreign.
type userMessage struct {
	Task string `json:"task"`
	User
}

// decodeUser reads and validates a user request body.
func decodeUser(body []byte) (User, error) {
	var u User
	if err := decodeStrict(body, &u); err != nil {
		return User{}, err
	}
	if u.ID != "" {
		return User{}, errors.New(`"id" is given by the API, not the client`)
	}
	if err := checkText("name", u.Name, maxName); err != nil {
		return User{}, err
	}
	if err := checkEmail("email", u.Email); err != nil {
		return User{}, err
	}
	return u, nil
}

// decodeMail reads and validates a schedule-email request body against
// now; it returns the mail and the delay until it is due (0: now).
func decodeMail(body []byte, now time.Time) (q11.Mail, time.Duration, error) {
	var m q11.Mail
	if err := decodeStrict(body, &m); err != nil {
		return q11.Mail{}, 0, err
	}
	if m.Task != "" {
		return q11.Mail{}, 0, errors.New(`"task" is given by the API, not the client`)
	}
	if err := checkEmail("to", m.To); err != nil {
		return q11.Mail{}, 0, err
	}
	if err := checkText("subject", m.Subject, maxSubject); err != nil {
		return q11.Mail{}, 0, err
	}
	if m.ScheduledTime == "" {
		return q11.Mail{}, 0, errors.New(`missing "scheduledTime" (ISO-8601, e.g. 2026-02-08T11:39:51Z)`)
	}
	due, delay, err := q11.ParseScheduledTime(m.ScheduledTime, now)
	switch {
	case err != nil:
		return q11.Mail{}, 0, err
	case due.Before(now.Add(-pastGrace)):
		return q11.Mail{}, 0, fmt.Errorf("scheduledTime %s is %s in the past: a mail cannot be sent then",
			m.ScheduledTime, now.Sub(due).Round(time.Second))
	case delay > maxAhead:
		return q11.Mail{}, 0, fmt.Errorf("scheduledTime %s is more than %s ahead: the lab schedules within a day",
			m.ScheduledTime, maxAhead)
	}
	return m, delay, nil
}

// decodeStrict decodes one JSON object into v: unknown fields (a typo such
// as "scheduled_time") and anything after the object are errors.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty body: want a JSON object")
		}
		return fmt.Errorf("malformed JSON: %v", err)
	}
	if dec.More() {
		return errors.New("malformed JSON: more than one value in the body")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("malformed JSON: trailing data after the object")
	}
	return nil
}

// checkText requires field to be non-blank valid text of at most max runes.
func checkText(field, s string, max int) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("missing %q", field)
	case !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError):
		return fmt.Errorf("%q is not valid UTF-8", field)
	case utf8.RuneCountInString(s) > max:
		return fmt.Errorf("%q is longer than %d characters", field, max)
	}
	return nil
}

// checkEmail requires field to be a bare address (user@host), no display
// name, no surrounding space.
func checkEmail(field, s string) error {
	if s == "" {
		return fmt.Errorf("missing %q", field)
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || len(s) > maxEmail || !strings.Contains(s[strings.LastIndexByte(s, '@'):], ".") {
		return fmt.Errorf("%q is not an email address: %q (want e.g. john@example.com)", field, s)
	}
	return nil
}

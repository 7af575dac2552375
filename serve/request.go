package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	netmail "net/mail"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/queuelab/qlab/seeds/mail"
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
func decodeMail(body []byte, now time.Time) (mail.Mail, time.Duration, error) {
	var m mail.Mail
	if err := decodeStrict(body, &m); err != nil {
		return mail.Mail{}, 0, err
	}
	if m.Task != "" {
		return mail.Mail{}, 0, errors.New(`"task" is given by the API, not the client`)
	}
	if err := checkEmail("to", m.To); err != nil {
		return mail.Mail{}, 0, err
	}
	if err := checkText("subject", m.Subject, maxSubject); err != nil {
		return mail.Mail{}, 0, err
	}
	if m.ScheduledTime == "" {
		return mail.Mail{}, 0, errors.New(`missing "scheduledTime" (ISO-8601, e.g. 2026-02-08T11:39:51Z)`)
	}
	due, delay, err := mail.ParseScheduledTime(m.ScheduledTime, now)
	switch {
	case err != nil:
		return mail.Mail{}, 0, err
	case due.Before(now.Add(-pastGrace)):
		return mail.Mail{}, 0, fmt.Errorf("scheduledTime %s is %s in the past (the server's time is %s): a mail cannot be sent then",
			m.ScheduledTime, howLongAgo(now.Sub(due)), now.UTC().Format(time.RFC3339))
	case delay > maxAhead:
		return mail.Mail{}, 0, fmt.Errorf("scheduledTime %s is more than %s ahead: the lab schedules within a day",
			m.ScheduledTime, maxAhead)
	}
	return m, delay, nil
}

// howLongAgo says a span in the past the way a person reads it: seconds
// up to an hour, then hours, then days. A time.Duration holds 292 years
// at most: a year-1 scheduledTime comes back as that bound, and is just
// "more than 290 years".
func howLongAgo(d time.Duration) string {
	switch {
	case d == math.MaxInt64: // time.Time.Sub saturates
		return "more than 290 years"
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return fmt.Sprintf("%d hours", int(d/time.Hour))
	default:
		return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	}
}

// decodeStrict decodes one JSON object into v, a pointer to a struct:
// unknown fields (a typo such as "scheduled_time"), a key in another case
// than the field's ("Name": encoding/json would take it), a key given
// twice (encoding/json would keep the last) and anything after the
// object are errors.
func decodeStrict(body []byte, v any) error {
	if err := checkKeys(body, jsonFields(v)); err != nil {
		return err
	}
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

// checkKeys reads the keys of body's top-level object, if it is one (the
// decoder reports anything else), and refuses a key that is not exactly
// one of fields, or that comes twice.
func checkKeys(body []byte, fields []string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil // malformed: the decoder says how
		}
		key, _ := tok.(string)
		switch {
		case seen[key]:
			return fmt.Errorf("malformed JSON: key %q given twice", key)
		case !slices.Contains(fields, key):
			return unknownKey(key, fields)
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
	}
	return nil
}

// unknownKey is the error for key, which is none of fields: a field
// spelt in another case is named.
func unknownKey(key string, fields []string) error {
	for _, f := range fields {
		if strings.EqualFold(f, key) {
			return fmt.Errorf("unknown field %q: keys are case-sensitive, want %q", key, f)
		}
	}
	return fmt.Errorf("unknown field %q: want %s", key, strings.Join(quoted(fields), ", "))
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// jsonFields are the JSON keys of the struct v points to, as its json
// tags name them.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v).Elem()
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
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
	return checkRunes(field, s)
}

// checkRunes refuses the characters that do harm where a name is shown
// or logged: control characters (NUL, ESC starts a terminal escape, C1
// controls), bidirectional overrides and isolates, which reorder the text
// around them ("Trojan Source"), and the Unicode line and paragraph
// separators.
func checkRunes(field, s string) error {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' {
			return fmt.Errorf("%q holds the control character %U: not allowed in text", field, r)
		}
	}
	return nil
}

// checkEmail requires field to be a bare address (user@host), no display
// name, no surrounding space.
func checkEmail(field, s string) error {
	if s == "" {
		return fmt.Errorf("missing %q", field)
	}
	if err := checkRunes(field, s); err != nil {
		return err
	}
	addr, err := netmail.ParseAddress(s)
	if err != nil || addr.Address != s || len(s) > maxEmail || !strings.Contains(s[strings.LastIndexByte(s, '@'):], ".") {
		return fmt.Errorf("%q is not an email address: %q (want e.g. john@example.com)", field, s)
	}
	return nil
}

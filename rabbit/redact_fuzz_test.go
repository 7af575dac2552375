package rabbit

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// messagesFor is every line qlab can print about rawURL: the redacted URL,
// a Broker's description, and the errors of a failed dial, with library
// errors that quote the URL the ways Go's libraries do.
func messagesFor(rawURL string) []string {
	out := []string{Redact(rawURL), Broker{URL: rawURL, How: EnvURL}.String()}
	libraryErrs := []error{
		&url.Error{Op: "parse", URL: rawURL, Err: errors.New("invalid URL escape")},
		fmt.Errorf("dial %s: connection refused", rawURL),
		fmt.Errorf("bad URI %s", strconv.Quote(rawURL)),
		amqp.ErrCredentials,
	}
	for _, err := range libraryErrs {
		de := dialFailure(rawURL, err)
		nb := NoBrokerError{EnvURL: true, Tried: []Tried{triedURL(EnvURL+"="+Redact(rawURL), de)}}
		out = append(out, de.Error(), nb.Error(), nb.Details())
	}
	if _, err := amqp.ParseURI(rawURL); err != nil { // dial returns at once, without a network
		_, err := dial(context.Background(), rawURL, nil)
		out = append(out, err.Error())
	}
	return out
}

// FuzzRedactNotAURL: a value with neither "://" nor "@" may be a
// password on its own: no message about it prints it.
func FuzzRedactNotAURL(f *testing.F) {
	f.Add("S3cretPW")
	f.Add("guest:guest")
	f.Fuzz(func(t *testing.T, value string) {
		if !isNotAURL(value) || len(value) < minHidden || strings.Contains(notAURL(value), value) {
			t.Skip()
		}
		const stand = "\x01\x02\x03\x04"
		for _, m := range messagesFor(stand) {
			if strings.Contains(m, value) {
				t.Skip() // the value is also ordinary text here
			}
		}
		for _, m := range messagesFor(value) {
			if strings.Contains(m, value) {
				t.Fatalf("value %q printed in %q", value, m)
			}
		}
	})
}

// FuzzRedact: for a URL with userinfo before + ":" + password + "@" +
// after, parsable or not, the password never appears in any message
// printed about it. (Cases where the password also occurs in the parts
// printed on purpose, the host or the fixed text, are skipped.)
func FuzzRedact(f *testing.F) {
	f.Add("amqp://guest", "guest-pw", "127.0.0.1:5672/")
	f.Add("00", "secret", "0")
	f.Add("amqp://u", "secret", "%0")
	f.Add("amqps://u", "s3cr%40t", "host/vhost")
	f.Add("amqp://u", "p@ss word", "host:5672/\x7f")
	f.Fuzz(func(t *testing.T, before, password, after string) {
		if len(password) < 3 || strings.Contains(before+after, password) {
			t.Skip()
		}
		if strings.HasPrefix(password, "//") && isScheme(before) {
			t.Skip() // "A" + ":" + "//0" + "@0" is scheme A, user 0: no password at all
		}
		const stand = "\x01\x02\x03"
		for _, m := range messagesFor(before + ":" + stand + "@" + after) {
			if strings.Contains(m, password) {
				t.Skip() // the password is also ordinary text here
			}
		}
		for _, m := range messagesFor(before + ":" + password + "@" + after) {
			if strings.Contains(m, password) {
				t.Fatalf("password %q printed in %q", password, m)
			}
		}
	})
}

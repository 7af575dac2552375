package mail

import (
	"strings"
	"testing"
	"time"
)

// FuzzDecodeMail: a body either decodes to a mail with a recipient and a
// scheduledTime, or is refused with a one-line reason; never a panic.
func FuzzDecodeMail(f *testing.F) {
	f.Add([]byte(`{"task":"a-5s","to":"recipient@example.com","subject":"s","scheduledTime":"2026-02-08T11:39:51Z"}`))
	f.Add([]byte(`{"task":"a-5s","to":"","scheduledTime":"2026-02-08T11:39:51Z"}`))
	f.Add([]byte(`{"task":"a-5s","to":"  ","scheduledTime":"x"}`))
	f.Add([]byte(`{"task":"a-5s","to":"a@b"}`))
	f.Add([]byte(`{"to":7}`))
	f.Add([]byte(``))
	f.Add([]byte(`not json`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Decode(body)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("reason is not one line: %q", err)
			}
			return
		}
		if strings.TrimSpace(req.To) == "" || req.ScheduledTime == "" {
			t.Fatalf("accepted %q as %+v", body, req)
		}
	})
}

// FuzzParseScheduledTime: any string, against any now, is a due time
// with a delay that is never negative and never overshoots it, or a
// one-line error that quotes the input; never a panic.
func FuzzParseScheduledTime(f *testing.F) {
	for _, s := range []string{"2026-02-08T11:39:51Z", "2026-02-08T11:39:51+02:00", "2026-02-08T11:39:51",
		"2026-02-08T11:39:51.123456789Z", "2026-02-08", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
		"2026-02-30T11:39:51Z", "2026-02-08T24:00:00Z", "2026-02-08T11:39:51+99:00", "", "\x00"} {
		f.Add(s, int64(1_770_000_000))
	}
	f.Fuzz(func(t *testing.T, s string, nowUnix int64) {
		now := time.Unix(nowUnix, 0).UTC()
		due, delay, err := ParseScheduledTime(s, now)
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "scheduledTime") {
				t.Fatalf("error is not one line naming scheduledTime: %q", err)
			}
			return
		}
		if delay < 0 {
			t.Fatalf("%q: negative delay %v", s, delay)
		}
		if delay > 0 && !now.Add(delay).Equal(due) && due.Sub(now) < time.Duration(1<<63-1) {
			t.Fatalf("%q: delay %v does not reach due %v from %v", s, delay, due, now)
		}
	})
}

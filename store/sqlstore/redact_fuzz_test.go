package sqlstore

import (
	"strings"
	"testing"
)

// FuzzRedact: whatever the user, password and rest of a URL, Redact leaves
// the password out (unless it also appears elsewhere in the URL) and an
// error text quoting the URL, redacted by redactIn, holds no password.
func FuzzRedact(f *testing.F) {
	f.Add("postgres", "S3cretXY", "127.0.0.1:5432/test")
	f.Add("u", "p@ss", "db:54x2/t%zz")
	f.Add("", "%41b", "h/d?sslmode=disable")
	f.Fuzz(func(t *testing.T, user, password, rest string) {
		if password == "" || strings.ContainsAny(user, ":@") || strings.Contains(rest, "@") ||
			strings.Contains(password, "xxxxx") || strings.Contains("xxxxx", password) {
			return
		}
		raw := "postgres://" + user + ":" + password + "@" + rest
		outside := strings.Count("postgres://"+user+":@"+rest, password)
		if got := Redact(raw); strings.Count(got, password) > outside {
			t.Fatalf("Redact(%q) = %q shows the password", raw, got)
		}
		msg := redactIn("cannot parse `"+raw+"`: bad", raw)
		if strings.Count(msg, password) > strings.Count("cannot parse `postgres://"+user+":xxxxx@"+rest+"`: bad", password) {
			t.Fatalf("redactIn left the password in %q", msg)
		}
	})
}

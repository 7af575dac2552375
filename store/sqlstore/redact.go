package sqlstore

import (
	"net/url"
	"strings"
)

// Redact returns rawURL with the password in its userinfo replaced by
// xxxxx (postgres://user:xxxxx@host/db); a URL without one is returned as
// is. It works on URLs that do not parse, too.
func Redact(rawURL string) string {
	start, end, ok := passwordSpan(rawURL)
	if !ok {
		return rawURL
	}
	return rawURL[:start] + "xxxxx" + rawURL[end:]
}

// passwordSpan finds the password in scheme://user:password@rest, taking
// the last "@" (a password may hold an unescaped "@").
func passwordSpan(rawURL string) (start, end int, ok bool) {
	_, afterScheme, found := strings.Cut(rawURL, "://")
	if !found {
		return 0, 0, false
	}
	base := len(rawURL) - len(afterScheme)
	at := strings.LastIndex(afterScheme, "@")
	if at < 0 {
		return 0, 0, false
	}
	colon := strings.Index(afterScheme[:at], ":")
	if colon < 0 {
		return 0, 0, false
	}
	return base + colon + 1, base + at, true
}

// redactIn removes rawURL's password from msg, as written and decoded,
// wherever a driver's error may quote it.
func redactIn(msg, rawURL string) string {
	start, end, ok := passwordSpan(rawURL)
	if !ok {
		return msg
	}
	msg = strings.ReplaceAll(msg, rawURL, Redact(rawURL))
	password := rawURL[start:end]
	if password == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, password, "xxxxx")
	if decoded, err := url.PathUnescape(password); err == nil && decoded != "" {
		msg = strings.ReplaceAll(msg, decoded, "xxxxx")
	}
	return msg
}

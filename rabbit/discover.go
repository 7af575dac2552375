package rabbit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
)

// DefaultURL is where the project's machines run RabbitMQ.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// EnvURL names the environment variable that points QueueLab at a broker:
// one URL, or the nodes of one cluster separated by commas (SplitURLs), of
// which a run uses any that answers.
const EnvURL = "RABBITMQ_URL"

// howToGetABroker is the short advice printed when no broker answers.
const howToGetABroker = "start one with `rabbitmq-server -detached`, or `qlab broker up` where Docker runs"

// probeTimeout bounds each discovery step's dial. RabbitMQ answers a wrong
// password only after about 3 s, so less would report it as "no answer".
const probeTimeout = 5 * time.Second

// Broker is a broker that answered: its URL, how it was found and the
// version it reported in the connection's server properties.
type Broker struct {
	URL     string // full AMQP URL, password included: never print it, print Redact(URL)
	How     string // "RABBITMQ_URL", "default URL" or "docker container qlab-rabbitmq"
	Version string // server_properties["version"], e.g. "3.10.8"
}

// String describes the broker with its password redacted.
func (b Broker) String() string {
	return fmt.Sprintf("RabbitMQ %s at %s (found via %s)", b.Version, Redact(b.URL), b.How)
}

// DiscoverOptions tune Discover. The zero value tries the environment and
// the default URL only.
type DiscoverOptions struct {
	// Docker also lets Discover start (or reuse) a rabbitmq:4-management
	// container through dockertest when a Docker engine answers.
	Docker bool
	// DefaultURL replaces DefaultURL as the second place tried; "" means
	// DefaultURL.
	DefaultURL string
}

// ErrNoBroker is wrapped by Discover's error when no broker answered.
var ErrNoBroker = errors.New("no RabbitMQ broker found")

// NoBrokerError is Discover's error: every place tried and why it failed,
// passwords redacted. Error is one short line; Details has the libraries'
// own messages.
type NoBrokerError struct {
	Tried []Tried
	// EnvURL is true when RABBITMQ_URL was set: it was then the only place
	// tried, and the advice is to fix it.
	EnvURL bool
}

// Tried is one place Discover looked.
type Tried struct {
	Where  string // "RABBITMQ_URL=amqp://u:xxxxx@host/", "amqp://guest:xxxxx@127.0.0.1:5672/", "Docker"
	Reason string // short: "connection refused", "authentication failed", "no Docker engine answers"
	Detail string // the full error, password redacted
}

// Error says in one line where Discover looked and what to do.
func (e *NoBrokerError) Error() string {
	var tried []string
	for _, t := range e.Tried {
		tried = append(tried, t.Where+": "+t.Reason)
	}
	if e.EnvURL {
		return fmt.Sprintf("%s: %s (RABBITMQ_URL is set, so no other broker is tried: fix or unset it)", ErrNoBroker, strings.Join(tried, "; "))
	}
	return fmt.Sprintf("%s (%s); %s", ErrNoBroker, strings.Join(tried, "; "), howToGetABroker)
}

// Details lists every place tried with the full error, one per line.
func (e *NoBrokerError) Details() string {
	var b strings.Builder
	for _, t := range e.Tried {
		fmt.Fprintf(&b, "  %s: %s\n", t.Where, t.Detail)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrNoBroker) hold.
func (e *NoBrokerError) Unwrap() error { return ErrNoBroker }

// Discover finds a broker. When $RABBITMQ_URL is set it is the only place
// tried (all of its nodes, when it lists several; Broker.URL keeps the
// whole list, so a session moves to another node when one dies). Otherwise: DefaultURL (or opts.DefaultURL), then (with
// opts.Docker) a dockertest container. Each dial is bounded by a few
// seconds and by ctx. The error is a *NoBrokerError (wrapping ErrNoBroker).
func Discover(ctx context.Context, opts DiscoverOptions) (Broker, error) {
	if env := strings.TrimSpace(os.Getenv(EnvURL)); env != "" {
		b, err := Probe(ctx, env, EnvURL)
		if err != nil {
			return Broker{}, &NoBrokerError{EnvURL: true, Tried: []Tried{triedURL(EnvURL+"="+Redact(env), err)}}
		}
		return b, nil
	}
	def := cmp.Or(opts.DefaultURL, DefaultURL)
	b, err := Probe(ctx, def, "default URL")
	if err == nil {
		return b, nil
	}
	fail := &NoBrokerError{Tried: []Tried{triedURL(Redact(def), err)}}
	if opts.Docker {
		b, err := dockerUp(ctx)
		if err == nil {
			return b, nil
		}
		reason := "could not start a container"
		if errors.Is(err, ErrNoDocker) {
			reason = "no Docker engine answers"
		}
		fail.Tried = append(fail.Tried, Tried{Where: "Docker", Reason: reason, Detail: err.Error()})
	}
	return Broker{}, fail
}

// triedURL describes a failed Probe of a URL.
func triedURL(where string, err error) Tried {
	t := Tried{Where: where, Reason: "failed", Detail: err.Error()}
	var de *DialError
	if errors.As(err, &de) {
		// where already names the URL: the detail need not repeat it.
		t.Reason, t.Detail = de.Reason, strings.TrimPrefix(t.Detail, de.URL+": ")
	}
	return t
}

// Probe dials rawURL once, within a few seconds and ctx, reads the server
// version and closes the connection. how is recorded in the Broker.
func Probe(ctx context.Context, rawURL, how string) (Broker, error) {
	conn, err := dial(ctx, rawURL, nil)
	if err != nil {
		return Broker{}, err
	}
	defer closeWithin(conn)
	return Broker{URL: rawURL, How: how, Version: ServerVersion(conn)}, nil
}

// ServerVersion is the version the broker announced when conn opened.
func ServerVersion(conn *amqp.Connection) string {
	if v, ok := conn.Properties["version"].(string); ok {
		return v
	}
	return "unknown"
}

// DialError is a failed connection to a broker, password-free.
type DialError struct {
	URL    string // redacted
	Reason string // "connection refused", "authentication failed", "vhost not allowed", "no answer", "not an AMQP URL", ...
	Detail string // the library's message with the password redacted ("" for a URL that does not parse)
}

// transient reports whether the same dial may succeed later: the broker
// refused the TCP connection, did not answer, or dropped it during the
// handshake (a node stopping or starting), as opposed to refusing the
// credentials, the vhost, the host name or the URL.
func (e *DialError) transient() bool {
	switch e.Reason {
	case "connection refused", "no answer", "failed":
		return true
	}
	return false
}

// Error is the redacted URL, the reason and the detail.
func (e *DialError) Error() string {
	if e.Detail == "" {
		return e.URL + ": " + e.Reason
	}
	return e.URL + ": " + e.Reason + ": " + e.Detail
}

// dialFailure classifies err, a failed dial of rawURL, and keeps the
// password of rawURL out of every part of it.
func dialFailure(rawURL string, err error) *DialError {
	de := &DialError{URL: Redact(rawURL), Reason: "failed", Detail: redactIn(err.Error(), rawURL)}
	var amqpErr *amqp.Error
	var netErr net.Error
	switch {
	case errors.Is(err, amqp.ErrCredentials), errors.Is(err, amqp.ErrSASL):
		de.Reason = "authentication failed"
	case errors.Is(err, amqp.ErrVhost), errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotAllowed:
		de.Reason = "vhost not allowed (it does not exist or the user has no access)"
	case errors.As(err, &amqpErr) && amqpErr.Code == amqp.AccessRefused:
		de.Reason = "access refused"
	case errors.Is(err, syscall.ECONNREFUSED):
		de.Reason = "connection refused"
	case errors.As(err, &netErr) && netErr.Timeout():
		de.Reason = "no answer"
	case errors.As(err, new(*net.DNSError)):
		de.Reason = "unknown host"
	}
	return de
}

// dial opens a connection bounded by probeTimeout and ctx. A non-nil
// netDial replaces the TCP dial (the Consumer uses it to keep the socket).
// Errors are *DialError: the redacted URL, never the password.
func dial(ctx context.Context, rawURL string, netDial func(network, addr string) (net.Conn, error)) (*amqp.Connection, error) {
	return dialAs(ctx, rawURL, "qlab", netDial)
}

// dialAs is dial with the connection name the broker shows (rabbitmqctl
// list_connections client_properties, the management UI). rawURL may list
// several nodes of one cluster (SplitURLs): it connects to the first that
// answers, so a run moves to another node when one dies. A node that
// refuses the request itself (credentials, vhost, URL) ends the search.
func dialAs(ctx context.Context, rawURL, name string, netDial func(network, addr string) (net.Conn, error)) (*amqp.Connection, error) {
	urls := SplitURLs(rawURL)
	if len(urls) == 1 {
		return dialNode(ctx, rawURL, name, netDial)
	}
	var tried []string
	var last *DialError
	for _, u := range urls {
		conn, err := dialNode(ctx, u, name, netDial)
		if err == nil {
			return conn, nil
		}
		if !errors.As(err, &last) || !last.transient() {
			return nil, err
		}
		tried = append(tried, last.Error())
	}
	return nil, &DialError{URL: Redact(rawURL), Reason: last.Reason,
		Detail: fmt.Sprintf("none of the %d nodes answered: %s", len(urls), strings.Join(tried, "; "))}
}

// dialNode dials one node's URL.
func dialNode(ctx context.Context, rawURL, name string, netDial func(network, addr string) (net.Conn, error)) (*amqp.Connection, error) {
	if err := checkURL(rawURL); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cfg := amqp.Config{Dial: amqp.DefaultDial(probeTimeout), Properties: amqp.NewConnectionProperties()}
	cfg.Properties.SetClientConnectionName(name)
	if netDial != nil {
		cfg.Dial = netDial
	}
	if f := lab.FaultsFrom(ctx); f != nil { // the TUI's fault keys may cut it
		cfg.Dial = faultDial(f, cfg.Dial)
	}
	type result struct {
		conn *amqp.Connection
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := amqp.DialConfig(rawURL, cfg)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, dialFailure(rawURL, r.err)
		}
		return r.conn, nil
	case <-ctx.Done():
		go func() { // the dial may still succeed; do not leak its connection
			if r := <-done; r.conn != nil {
				_ = closeWithin(r.conn)
			}
		}()
		return nil, &DialError{URL: Redact(rawURL), Reason: "no answer", Detail: fmt.Sprintf("nothing within %v", probeTimeout)}
	}
}

// checkURL refuses a URL amqp091-go cannot parse, and one it would read
// as something else than what was written: "amqp:guest:pw@host/vhost"
// (no "//") parses as an opaque URL, which amqp091-go takes for the
// default guest@localhost, vhost "/". The error never quotes the password.
func checkURL(rawURL string) error {
	const want = "want amqp://user:pass@host:port/vhost"
	uri, err := amqp.ParseURI(rawURL)
	if err != nil {
		// The parser's message may quote the URL: say only which form is expected.
		return &DialError{URL: Redact(rawURL), Reason: "not an AMQP URL (" + want + ")"}
	}
	if u, err := url.Parse(rawURL); err == nil && u.Opaque == "" {
		return nil
	}
	return &DialError{URL: Redact(rawURL), Reason: fmt.Sprintf(
		"not an AMQP URL: amqp091-go would read it as %s@%s:%d, vhost %q, not what it says (%s)",
		uri.Username, uri.Host, uri.Port, uri.Vhost, want)}
}

// userinfoInText is a user:password@ pair anywhere in a text: a broker's
// reply may quote a mangled URL (a vhost holding a second URL), whose
// password Redact's reading of the whole URL does not know.
var userinfoInText = regexp.MustCompile(`([A-Za-z0-9._~%!$&'()*+,;=-]+):[^@\s/"']+@`)

// SplitURLs splits a list of broker URLs, the nodes of one cluster, as
// RABBITMQ_URL may hold them: separated by commas, each starting with
// amqp:// or amqps:// (a comma inside a password stays part of it).
// Spaces around each are trimmed; a single URL is a list of one.
func SplitURLs(list string) []string {
	var urls []string
	for _, part := range strings.Split(list, ",") {
		trimmed := strings.TrimSpace(part)
		lower := strings.ToLower(trimmed)
		if len(urls) > 0 && !strings.HasPrefix(lower, "amqp://") && !strings.HasPrefix(lower, "amqps://") {
			urls[len(urls)-1] += "," + part // not a new URL: a comma inside the last one
			continue
		}
		urls = append(urls, trimmed)
	}
	return urls
}

// Redact returns rawURL with its password replaced by "xxxxx", so URLs can
// be printed and logged, whether or not they parse; a list (SplitURLs) has
// each URL redacted. The userinfo is
// everything between the scheme's "://" (or the start) and the last "@";
// its password is everything after its first ":". A value with neither
// "://" nor "@" is no URL at all, and may be the password alone
// (RABBITMQ_URL=S3cretPW): it is hidden whole (notAURL).
func Redact(rawURL string) string {
	if urls := SplitURLs(rawURL); len(urls) > 1 {
		for i, u := range urls {
			urls[i] = Redact(u)
		}
		return strings.Join(urls, ",")
	}
	if isNotAURL(rawURL) {
		return notAURL(rawURL)
	}
	userinfo, rest, ok := splitUserinfo(rawURL)
	if !ok {
		return rawURL
	}
	user, _, hasPassword := strings.Cut(userinfo, ":")
	if !hasPassword {
		return rawURL
	}
	return rawURL[:len(rawURL)-len(userinfo)-1-len(rest)] + user + ":xxxxx@" + rest
}

// isNotAURL reports whether s, non-empty, has neither a scheme's "://"
// nor a userinfo's "@": what is printed of it is notAURL(s).
func isNotAURL(s string) bool {
	return s != "" && !strings.Contains(s, "://") && !strings.Contains(s, "@")
}

// notAURL is what is printed of a value that is no URL: its length only.
func notAURL(s string) string {
	return fmt.Sprintf("<hidden: %d characters, not a URL>", utf8.RuneCountInString(s))
}

// splitUserinfo splits rawURL around its userinfo (see Redact): the
// userinfo and what follows the last "@". ok is false without an "@".
func splitUserinfo(rawURL string) (userinfo, rest string, ok bool) {
	at := strings.LastIndex(rawURL, "@")
	if at < 0 {
		return "", "", false
	}
	start := 0
	if i := strings.Index(rawURL[:at], "://"); i > 0 && isScheme(rawURL[:i]) {
		start = i + 3
	}
	return rawURL[start:at], rawURL[at+1:], true
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i := range len(s) {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// RedactIn returns msg with rawURL's password hidden (see redactIn):
// for an error a caller prints after dialling rawURL itself.
func RedactIn(msg, rawURL string) string { return redactIn(msg, rawURL) }

// minHidden is the shortest value that is no URL which redactIn hides
// inside a message: replacing every "a" of a message would garble it.
const minHidden = 4

// redactIn returns msg with rawURL's password hidden, in case a library
// or the broker echoed the URL or the password: as they are,
// percent-decoded, or quoted the way Go quotes strings (%q, which escapes
// bytes such as \x7f); and any other user:password@ in it too.
func redactIn(msg, rawURL string) string {
	if urls := SplitURLs(rawURL); len(urls) > 1 {
		for _, u := range urls {
			msg = redactIn(msg, u)
		}
		return msg
	}
	if isNotAURL(rawURL) && len(rawURL) >= minHidden { // a shorter one would garble the message
		msg = strings.ReplaceAll(msg, rawURL, notAURL(rawURL))
	}
	userinfo, _, ok := splitUserinfo(rawURL)
	if !ok {
		return userinfoInText.ReplaceAllString(msg, "${1}:xxxxx@")
	}
	_, pw, _ := strings.Cut(userinfo, ":")
	secrets := []string{rawURL, pw}
	if decoded, err := url.PathUnescape(pw); err == nil {
		secrets = append(secrets, decoded)
	}
	var forms []string
	for _, secret := range secrets {
		for _, form := range []string{secret, quotedInner(secret, strconv.Quote), quotedInner(secret, strconv.QuoteToASCII)} {
			if form != "" {
				forms = append(forms, form, "xxxxx")
			}
		}
	}
	// One pass: a replacement is never searched again, so a password that
	// occurs in "xxxxx" cannot make the message grow.
	return userinfoInText.ReplaceAllString(strings.NewReplacer(forms...).Replace(msg), "${1}:xxxxx@")
}

// quotedInner is s quoted by quote, without the surrounding quotes.
func quotedInner(s string, quote func(string) string) string {
	q := quote(s)
	return q[1 : len(q)-1]
}

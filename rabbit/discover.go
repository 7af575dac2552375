package rabbit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// DefaultURL is where the project's machines run RabbitMQ.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// EnvURL names the environment variable that points QueueLab at a broker.
const EnvURL = "RABBITMQ_URL"

// HowToGetABroker is the one line printed when no broker answers.
const HowToGetABroker = "start one with `rabbitmq-server -detached` (Debian package rabbitmq-server), " +
	"or `qlab broker up` where Docker runs, or set RABBITMQ_URL=amqp://user:pass@host:5672/"

// probeTimeout bounds each discovery step's dial.
const probeTimeout = 3 * time.Second

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
	// Docker also lets Discover start (or reuse) a rabbitmq:3-management
	// container through dockertest when a Docker engine answers.
	Docker bool
	// DefaultURL replaces DefaultURL as the second place tried; "" means
	// DefaultURL.
	DefaultURL string
}

// ErrNoBroker is wrapped by Discover's error when no broker answered.
var ErrNoBroker = errors.New("no RabbitMQ broker found")

// Discover finds a broker, in order: $RABBITMQ_URL, DefaultURL (or
// opts.DefaultURL), and (with opts.Docker) a dockertest container. Each dial is bounded by a few
// seconds and by ctx. The error wraps ErrNoBroker, names every place tried
// (passwords redacted) and ends with HowToGetABroker.
func Discover(ctx context.Context, opts DiscoverOptions) (Broker, error) {
	var tried []string
	if env := strings.TrimSpace(os.Getenv(EnvURL)); env != "" {
		b, err := Probe(ctx, env, EnvURL)
		if err == nil {
			return b, nil
		}
		tried = append(tried, err.Error())
	}
	def := opts.DefaultURL
	if def == "" {
		def = DefaultURL
	}
	b, err := Probe(ctx, def, "default URL")
	if err == nil {
		return b, nil
	}
	tried = append(tried, err.Error())
	if opts.Docker {
		b, err := DockerUp(ctx)
		if err == nil {
			return b, nil
		}
		tried = append(tried, err.Error())
	}
	return Broker{}, fmt.Errorf("%w (%s); %s", ErrNoBroker, strings.Join(tried, "; "), HowToGetABroker)
}

// Probe dials rawURL once, within a few seconds and ctx, reads the server
// version and closes the connection. how is recorded in the Broker.
func Probe(ctx context.Context, rawURL, how string) (Broker, error) {
	conn, err := dial(ctx, rawURL, nil)
	if err != nil {
		return Broker{}, err
	}
	defer conn.Close()
	return Broker{URL: rawURL, How: how, Version: ServerVersion(conn)}, nil
}

// ServerVersion is the version the broker announced when conn opened.
func ServerVersion(conn *amqp.Connection) string {
	if v, ok := conn.Properties["version"].(string); ok {
		return v
	}
	return "unknown"
}

// dial opens a connection bounded by probeTimeout and ctx. A non-nil
// netDial replaces the TCP dial (the Consumer uses it to keep the socket).
// Errors carry the redacted URL, never the password.
func dial(ctx context.Context, rawURL string, netDial func(network, addr string) (net.Conn, error)) (*amqp.Connection, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cfg := amqp.Config{Dial: amqp.DefaultDial(probeTimeout), Properties: amqp.NewConnectionProperties()}
	cfg.Properties.SetClientConnectionName("qlab")
	if netDial != nil {
		cfg.Dial = netDial
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
			return nil, fmt.Errorf("%s: %s", Redact(rawURL), redactErr(r.err, rawURL))
		}
		return r.conn, nil
	case <-ctx.Done():
		go func() { // the dial may still succeed; do not leak its connection
			if r := <-done; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, fmt.Errorf("%s: no answer within %v", Redact(rawURL), probeTimeout)
	}
}

// Redact returns rawURL with any password replaced by "xxxxx", so URLs can
// be printed and logged. Strings that do not parse as URLs are returned
// with everything between "://" and "@" hidden.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		scheme, rest, ok := strings.Cut(rawURL, "://")
		if at := strings.LastIndex(rest, "@"); ok && at >= 0 {
			return scheme + "://xxxxx@" + rest[at+1:]
		}
		return rawURL
	}
	return u.Redacted()
}

// redactErr renders err without the password of rawURL, in case a library
// echoes the URL back.
func redactErr(err error, rawURL string) string {
	msg := err.Error()
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

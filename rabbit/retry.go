package rabbit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// backoff is the package's one retry policy: the first pause after a
// failure, the longest pause (each pause doubles up to it) and how long a
// broker may stay away before the run is given up. Every wait for a broker
// that went away uses it: a session's first connection to it mid-run
// (Sibling, Dial), a consumer's connect and reconnect, a publish that lost
// its channel, and the connections and channels lessons open for
// themselves (Session.Dial, Session.Retry).
type backoff struct {
	Initial     time.Duration
	Max         time.Duration
	GiveUpAfter time.Duration
}

// defaultBackoff is the policy a session uses: 50 ms doubling to 1 s,
// given up after the session's GiveUpAfter (DefaultGiveUpAfter unless set).
var defaultBackoff = backoff{Initial: 50 * time.Millisecond, Max: time.Second, GiveUpAfter: DefaultGiveUpAfter}

// backoffFor is defaultBackoff bounded by a session's GiveUpAfter (0 for
// the default).
func backoffFor(giveUpAfter time.Duration) backoff {
	b := defaultBackoff
	b.GiveUpAfter = cmp.Or(giveUpAfter, b.GiveUpAfter)
	return b
}

// Retry runs try until it succeeds or fails with an error that is not
// Transient. Between tries it pauses as the session's backoff says, warns
// (throttled, see Warn) and counts the run as moving (WaitSettled). It
// stops early when ctx ends or the session fails (Err), and after
// backoff.GiveUpAfter of failures it fails the session with an error that
// names what. Under a clean-up context (cleaning) only ctx bounds it: a
// run that gave the broker up still deletes what it created if the
// broker comes back in time. It is the one retry loop of the package;
// lessons that open a channel or a connection for themselves use it too.
func (s *Session) Retry(ctx context.Context, what string, try func() error) error {
	b := backoffFor(s.GiveUpAfter)
	giveUp := time.Now().Add(b.GiveUpAfter)
	pause := b.Initial
	failed, clean := s.health.failed, isCleaning(ctx)
	if clean {
		failed = nil // the clean-up outlives the run's failure
	}
	for waiting := false; ; {
		err := try()
		if err == nil || ctx.Err() != nil || !Transient(err) {
			return err
		}
		if failure := s.Err(); failure != nil && !clean { // the run cannot go on: no second wait
			return fmt.Errorf("%s: %w", what, failure)
		}
		if !clean && time.Now().After(giveUp) {
			err = fmt.Errorf("%s: the broker stayed away for %v: %w", what, b.GiveUpAfter, err)
			s.health.fail(err)
			return err
		}
		if !waiting {
			waiting = true
			s.health.busyRetrying(1)
			defer s.health.busyRetrying(-1)
		}
		s.Warn("rabbit: the broker is away; trying again", "what", what, "err", redactIn(err.Error(), s.URL))
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return err
		case <-failed:
			return fmt.Errorf("%s: %w", what, s.Err())
		}
		pause = min(2*pause, b.Max)
	}
}

// ErrNoAnswer is wrapped by the error of a broker call that got no answer
// within its bound (see within).
var ErrNoAnswer = errors.New("broker did not answer")

// errLost marks the error of a publish whose channel closed under it: the
// message may not have reached the broker, and publishing it again on a
// new channel may succeed.
type errLost struct{ err error }

func (e *errLost) Error() string { return e.err.Error() }
func (e *errLost) Unwrap() error { return e.err }

// Transient reports whether err says the broker could not be reached,
// dropped the connection or channel (a restart, a node stopping, a
// close_all_connections), or did not answer, as opposed to refusing the
// request (404 NOT_FOUND, 406 PRECONDITION_FAILED, 403, credentials, a
// bad URL): trying the same thing again later may succeed. A socket that
// failed under a call on an open connection counts as a dropped one.
func Transient(err error) bool {
	var dial *DialError
	var lost *errLost
	var amqpErr *amqp.Error
	var sock *net.OpError
	switch {
	case errors.As(err, &lost), errors.Is(err, ErrNoAnswer):
		return true
	case errors.As(err, &dial):
		return dial.transient()
	case errors.As(err, &sock), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The socket of an open connection failed under a call (write:
		// broken pipe, connection reset) before amqp091-go closed it.
		return true
	case errors.As(err, &amqpErr):
		switch amqpErr.Code {
		case amqp.ConnectionForced, amqp.ChannelError, amqp.InternalError, amqp.ResourceError, amqp.FrameError:
			return true
		}
	}
	return false
}

// cleaningKey marks a context as a session's clean-up (cleaning).
type cleaningKey struct{}

// cleaning marks ctx as a clean-up's: Retry under it waits for the broker
// as long as ctx allows, even after the session failed or its
// GiveUpAfter passed, since deleting what the run created is worth a wait
// that carrying on the run was not.
func cleaning(ctx context.Context) context.Context {
	return context.WithValue(ctx, cleaningKey{}, true)
}

// isCleaning reports whether ctx is a clean-up's (cleaning).
func isCleaning(ctx context.Context) bool {
	on, _ := ctx.Value(cleaningKey{}).(bool)
	return on
}

package rabbit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
)

func TestTransientTellsAbsenceFromRefusal(t *testing.T) {
	cases := []struct {
		err  error
		away bool
	}{
		{&DialError{Reason: "connection refused"}, true},
		{&DialError{Reason: "no answer"}, true},
		{&DialError{Reason: "failed"}, true}, // dropped in the handshake: a node starting
		{fmt.Errorf("opening a confirm channel: %w", &DialError{Reason: "connection refused"}), true},
		{&DialError{Reason: "authentication failed"}, false},
		{&DialError{Reason: "unknown host"}, false},
		{amqp.ErrClosed, true},
		{&amqp.Error{Code: amqp.ConnectionForced, Reason: "CONNECTION_FORCED - shutdown"}, true},
		{&amqp.Error{Code: amqp.NotFound, Reason: "NOT_FOUND - no queue"}, false},
		{&amqp.Error{Code: amqp.PreconditionFailed}, false},
		{&amqp.Error{Code: amqp.AccessRefused}, false},
		{fmt.Errorf("declaring: %w: %w", ErrNoAnswer, context.DeadlineExceeded), true},
		{&errLost{ErrNacked}, true},                                       // a nack from a channel that closed under the publish
		{ErrNacked, false},                                                // a real nack: the broker refused it
		{&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, true}, // the fault suite's kept-down q11
		{fmt.Errorf("publishing: %w", io.ErrUnexpectedEOF), true},
		{errors.New("something else"), false},
	}
	for _, c := range cases {
		assert.Equal(t, c.away, Transient(c.err), "%v", c.err)
	}
}

// idleSession is a session that never dialled: enough for Retry,
// which only waits, counts and fails.
func idleSession(giveUp time.Duration) *Session {
	s := newSession("", Names{}, lab.Clock{}, slog.New(slog.DiscardHandler))
	s.GiveUpAfter = giveUp
	return s
}

func TestRetryWaitsForABrokerThatComesBack(t *testing.T) {
	s := idleSession(5 * time.Second)
	tries := 0
	err := s.Retry(context.Background(), "opening a publisher", func() error {
		tries++
		if tries > 1 {
			_, busy := s.guest.holdActivity()
			assert.True(t, busy, "waiting for the broker counts as the run moving (WaitSettled)")
		}
		if tries < 3 {
			return &DialError{Reason: "connection refused"}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, tries)
	assert.NoError(t, s.Err())
	_, busy := s.guest.holdActivity()
	assert.False(t, busy, "the wait is over: the run no longer counts as busy retrying")
}

func TestRetryGivesUpAndFailsTheSession(t *testing.T) {
	s := idleSession(300 * time.Millisecond)
	start := time.Now()
	err := s.Retry(context.Background(), "consuming email_queue", func() error {
		return &DialError{Reason: "connection refused"}
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "consuming email_queue: the broker stayed away for 300ms")
	assert.Less(t, time.Since(start), 10*time.Second, "bounded by GiveUpAfter, not by anything longer")
	assert.ErrorIs(t, s.Err(), err, "the run cannot go on: the session failed with the reason")
}

func TestRetryReturnsARefusalAtOnce(t *testing.T) {
	s := idleSession(time.Minute)
	tries := 0
	refused := &amqp.Error{Code: amqp.NotFound, Reason: "NOT_FOUND - no queue 'x'"}
	err := s.Retry(context.Background(), "consuming x", func() error { tries++; return refused })
	assert.Same(t, refused, err)
	assert.Equal(t, 1, tries)
	assert.NoError(t, s.Err())
}

package rabbit

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The connection part of a Session: its own connection, replaced after a
// loss (live), and the connections a worker dials of its own (Dial).
// Lock: link.mu, see link.

// logClose drains the connection's close notification and logs a close
// the session did not ask for.
func (s *Session) logClose(conn *amqp.Connection) {
	if err, ok := <-conn.NotifyClose(make(chan *amqp.Error, 1)); ok && err != nil {
		s.Logger.Warn("rabbit: session connection lost", "url", Redact(s.URL), "err", redactIn(err.Error(), s.URL))
	}
}

// Connection returns the session's current connection (e.g. for
// ServerVersion); it may have closed since.
func (s *Session) Connection() *amqp.Connection {
	s.link.mu.Lock()
	defer s.link.mu.Unlock()
	return s.link.conn
}

// ErrSessionClosed means the session was closed: it dials no more.
var ErrSessionClosed = errors.New("rabbit: the session is closed")

// live returns the session's connection, dialling a new one within ctx if
// the broker closed it (close_all_connections, a restart, a network cut),
// so a run's declares, publishes and clean-up outlive a drop.
func (s *Session) live(ctx context.Context) (*amqp.Connection, error) {
	s.link.mu.Lock()
	defer s.link.mu.Unlock()
	if !s.link.conn.IsClosed() {
		return s.link.conn, nil
	}
	if s.link.closed { // a late probe (a depth sample) must not dial a connection nobody closes
		return nil, ErrSessionClosed
	}
	conn, err := dialAs(ctx, s.URL, ConnectionName(s.Names), nil)
	if err != nil {
		return nil, err
	}
	if s.link.claimed { // the claim went with the old connection: take it again
		if err := reclaim(ctx, conn, s.Names); err != nil {
			_ = conn.Close()
			var claimed *ClaimedError
			if errors.As(err, &claimed) {
				s.fail(fmt.Errorf("the run lost its claim on its names while its connection was down: %w", err))
			}
			return nil, err
		}
	}
	s.Logger.Info("rabbit: session reconnected", "url", Redact(s.URL))
	s.link.conn = conn
	go s.logClose(conn)
	return conn, nil
}

// channel opens a channel on the session's live connection.
func (s *Session) channel(ctx context.Context) (*amqp.Channel, error) {
	conn, err := s.live(ctx)
	if err != nil {
		return nil, err
	}
	return conn.Channel()
}

// closeConn closes the session's connection for good: live dials no new
// one after it.
func (s *Session) closeConn() error {
	s.link.mu.Lock()
	defer s.link.mu.Unlock()
	s.link.closed = true
	return s.link.conn.Close()
}

// Dial opens a new connection to the session's broker, named as the run's
// (ConnectionName), for a worker that must not share the session's
// connection (one whose mistakes may cost it its connection). Each try is
// bounded by ctx and a few seconds; the session reached the broker, so one
// that does not answer now is waited for (Retry), for at most
// GiveUpAfter. The caller closes it; Close does not know it.
func (s *Session) Dial(ctx context.Context) (*amqp.Connection, error) {
	var conn *amqp.Connection
	err := s.Retry(ctx, "dialling the broker", func() (err error) {
		conn, err = dialAs(ctx, s.URL, ConnectionName(s.Names), nil)
		return err
	})
	return conn, err
}

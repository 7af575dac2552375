package rabbit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The connection part of a Session: its own connection, replaced after a
// loss (live), and the connections a worker dials of its own (Dial).

// link is the session's own connection. Its contract: live always hands
// out an open connection, dialling (and re-claiming the run's names) after
// a loss, until closeConn; after that it dials no more. mu guards conn,
// closed and claimed; it is held while live dials a replacement (so two
// callers never dial two) and never while the connection is used.
type link struct {
	s       *Session
	mu      sync.Mutex
	conn    *amqp.Connection
	closed  bool // Close has run: live dials no more
	claimed bool // the run's names are claimed on conn (claim.go)
}

// closeBound bounds the close handshake of a connection the package
// closes (closeWithin).
const closeBound = 5 * time.Second

// closeWithin closes conn, waiting at most closeBound for the broker's
// close-ok. It sets the socket's deadline first (CloseDeadline), and that
// fails a write already stuck on it, as one is behind a broker that has
// stopped reading (credit flow on a loaded broker): amqp091-go's
// shutdown waits for the channel that write holds, so a plain Close, or a
// close the broker began, would wait as long, the connection's goroutines
// with it. A close-ok that does not come in time is no error: the socket
// is closed either way, and the broker drops the connection with it.
func closeWithin(conn *amqp.Connection) error {
	err := conn.CloseDeadline(time.Now().Add(closeBound))
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return nil
	}
	return err
}

// logClose drains the connection's close notification and logs a close
// the session did not ask for.
func (l *link) logClose(conn *amqp.Connection) {
	if err, ok := <-conn.NotifyClose(make(chan *amqp.Error, 1)); ok && err != nil {
		l.s.Logger.Warn("rabbit: session connection lost", "url", Redact(l.s.URL), "err", redactIn(err.Error(), l.s.URL))
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
func (l *link) live(ctx context.Context) (*amqp.Connection, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.conn.IsClosed() {
		return l.conn, nil
	}
	if l.closed { // a late probe (a depth sample) must not dial a connection nobody closes
		return nil, ErrSessionClosed
	}
	// Its shutdown may be stuck behind a write (closeWithin): a deadline
	// already past fails that write now. After a close of ours it is a
	// no-op (ErrClosed).
	go l.conn.CloseDeadline(time.Now())
	conn, err := dialAs(ctx, l.s.URL, ConnectionName(l.s.Names), nil)
	if err != nil {
		return nil, err
	}
	if l.claimed { // the claim went with the old connection: take it again
		if err := reclaim(ctx, conn, l.s.Names); err != nil {
			_ = closeWithin(conn)
			var claimed *ClaimedError
			if errors.As(err, &claimed) {
				l.s.health.fail(fmt.Errorf("the run lost its claim on its names while its connection was down: %w", err))
			}
			return nil, err
		}
	}
	l.s.Logger.Info("rabbit: session reconnected", "url", Redact(l.s.URL))
	l.conn = conn
	go l.logClose(conn)
	return conn, nil
}

// channel opens a channel on the session's live connection.
func (l *link) channel(ctx context.Context) (*amqp.Channel, error) {
	conn, err := l.live(ctx)
	if err != nil {
		return nil, err
	}
	return conn.Channel()
}

// closeConn closes the session's connection for good: live dials no new
// one after it.
func (l *link) closeConn() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return closeWithin(l.conn)
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

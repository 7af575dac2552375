package rabbit

import (
	"context"
	"net"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// CuttableConn is a connection of its own whose TCP socket a lesson can
// cut the way a crash or a pulled cable does: no AMQP close handshake,
// and what still sits in the socket's buffers is thrown away (SO_LINGER
// 0 makes the close a reset), so a message the client "sent" may never
// reach the broker.
type CuttableConn struct {
	*amqp.Connection
	mu   sync.Mutex
	sock net.Conn
}

// DialCuttable dials a connection of the run's own (named as the run's,
// see ConnectionName), keeping the socket for Cut. Like Dial, each try is
// bounded by ctx and a few seconds, and a broker that does not answer is
// waited for as Retry says. Close it (Close on a cut connection returns an
// error, which callers may ignore).
func (s *Session) DialCuttable(ctx context.Context) (*CuttableConn, error) {
	c := &CuttableConn{}
	err := s.Retry(ctx, "dialling a connection of its own", func() error {
		conn, err := dialAs(ctx, s.URL, ConnectionName(s.Names), func(network, addr string) (net.Conn, error) {
			sock, err := amqp.DefaultDial(probeTimeout)(network, addr)
			c.mu.Lock()
			c.sock = sock
			c.mu.Unlock()
			return sock, err
		})
		c.Connection = conn
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Cut resets the TCP connection at once: unsent bytes are discarded and
// the broker sees the peer vanish. Every channel on it closes.
func (c *CuttableConn) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tcp, ok := c.sock.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // close sends RST and drops the send buffer
	}
	if c.sock != nil {
		_ = c.sock.Close()
	}
}

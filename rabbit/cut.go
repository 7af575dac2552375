package rabbit

import (
	"context"
	"net"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
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

// faultDial wraps dial so that every connection it opens is registered
// with f (lab.Faults, the TUI's fault keys) until it closes: the student's
// key then resets it as Cut does, and the run sees a connection lost to
// the network.
func faultDial(f *lab.Faults, dial func(network, addr string) (net.Conn, error)) func(network, addr string) (net.Conn, error) {
	return func(network, addr string) (net.Conn, error) {
		sock, err := dial(network, addr)
		if err != nil {
			return sock, err
		}
		fc := &faultConn{Conn: sock}
		fc.remove = f.AddConn(fc.reset)
		return fc, nil
	}
}

// faultConn is a socket registered with a lab.Faults until it closes.
type faultConn struct {
	net.Conn
	remove func()
	once   sync.Once
}

// Close unregisters the socket and closes it.
func (c *faultConn) Close() error {
	c.once.Do(c.remove)
	return c.Conn.Close()
}

// reset closes the socket with a TCP reset: no AMQP goodbye, and bytes
// not yet sent are thrown away.
func (c *faultConn) reset() {
	if tcp, ok := c.Conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Conn.Close()
}

// FaultDial is dial, registered with the run's lab.Faults when ctx
// carries one (lab.WithFaults), for a lesson that dials on its own (Q21's
// cluster connections): the TUI's fault key then cuts its connections too.
func FaultDial(ctx context.Context, dial func(network, addr string) (net.Conn, error)) func(network, addr string) (net.Conn, error) {
	if f := lab.FaultsFrom(ctx); f != nil {
		return faultDial(f, dial)
	}
	return dial
}

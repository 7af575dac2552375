package rabbittest

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Proxy forwards TCP connections from a loopback port to a broker, both
// ways, until the broker's side is muted: from then on what the broker
// sends is read and dropped, so the client's frames still arrive (a
// publish is stored, a basic.get served) but the client hears nothing
// back, as from a broker that stopped answering or died before its
// answer left. A broker that closes a connection closes the client's
// side too. It is for tests that need that fault at a precise point;
// the broker itself is not touched. Deafened, it does the same the other
// way: what the clients send is read and dropped, as frames written just
// before a connection died that never reached the broker. Stalled, it
// stops reading what the clients send, as a broker under flow control
// does: once the socket's buffers fill, a client's write blocks.
type Proxy struct {
	ln     net.Listener
	target string
	// budget is how many more bytes of the broker's the proxy forwards
	// (all connections together); negative: no limit.
	budget  atomic.Int64
	deaf    atomic.Bool  // drop what the clients send
	dropped atomic.Int64 // bytes of the clients' dropped while deaf
	mu      sync.Mutex
	conns   []net.Conn
	resume  chan struct{} // non-nil while stalled; closed when it ends
}

// StartProxy forwards a free loopback port to brokerURL's host until t
// ends (or Cut).
func StartProxy(t testing.TB, brokerURL string) *Proxy {
	t.Helper()
	return StartProxyOn(t, "127.0.0.1:0", brokerURL)
}

// StartProxyOn is StartProxy on addr: the address of a proxy that was
// cut, for a broker that comes back where it was.
func StartProxyOn(t testing.TB, addr, brokerURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(brokerURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	p := &Proxy{ln: ln, target: u.Host}
	p.budget.Store(-1)
	go p.accept()
	t.Cleanup(p.Cut)
	return p
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is brokerURL through the proxy.
func (p *Proxy) URL(brokerURL string) string {
	u, err := url.Parse(brokerURL)
	if err != nil {
		return ""
	}
	u.Host = p.Addr()
	return u.String()
}

// Mute drops everything the broker sends from now on.
func (p *Proxy) Mute() { p.budget.Store(0) }

// MuteAfter forwards n more bytes of the broker's, then mutes.
func (p *Proxy) MuteAfter(n int64) { p.budget.Store(n) }

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { pipe(out, in, p.gate, p.heard); out.Close() }()
		go func() { pipe(in, out, func() {}, p.take); in.Close() }()
	}
}

// Deafen drops everything the clients send from now on (Dropped counts
// it), until Reset.
func (p *Proxy) Deafen() { p.deaf.Store(true) }

// Stall stops reading what the clients send, until Reset or Cut.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// gate waits while the proxy is stalled.
func (p *Proxy) gate() {
	p.mu.Lock()
	resume := p.resume
	p.mu.Unlock()
	if resume != nil {
		<-resume
	}
}

// unstall ends a stall; p.mu is held.
func (p *Proxy) unstall() {
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// Dropped is how many bytes the clients sent while the proxy was deaf.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// Reset closes every connection through the proxy, as a network failure
// would, and forwards new ones both ways again: the broker requeues what
// their channels held unacknowledged, and a client that redials gets
// through.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.unstall()
	p.deaf.Store(false)
	p.budget.Store(-1)
}

// pipe copies what src sends to dst, passing of each read the first
// pass(n) bytes and dropping the rest, until either side closes; gate
// runs before each read.
func pipe(dst, src net.Conn, gate func(), pass func(n int) int) {
	buf := make([]byte, 4<<10)
	for {
		gate()
		n, err := src.Read(buf)
		if n > 0 {
			if k := pass(n); k > 0 {
				if _, werr := dst.Write(buf[:k]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// heard is how many of n bytes a client sent to pass to the broker: all,
// or none while the proxy is deaf (counted in dropped).
func (p *Proxy) heard(n int) int {
	if p.deaf.Load() {
		p.dropped.Add(int64(n))
		return 0
	}
	return n
}

// take spends up to n bytes of the budget and returns how many to pass.
func (p *Proxy) take(n int) int {
	for {
		left := p.budget.Load()
		if left < 0 {
			return n
		}
		pass := min(int64(n), left)
		if p.budget.CompareAndSwap(left, left-pass) {
			return int(pass)
		}
	}
}

// Cut closes the proxy's port and every connection through it: to its
// clients the broker is gone.
func (p *Proxy) Cut() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.unstall()
}

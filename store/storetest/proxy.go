package storetest

import (
	"bytes"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a database until Shut, which takes the
// database away from everything connected through it: the tests of "the
// database went away mid-run" (a crash or a restart looks like this to a
// client: its connections reset, new ones refused) without stopping a
// database that other tests share.
type Proxy struct {
	// Addr is where the proxy listens (127.0.0.1:<free port>): put it in
	// place of the database's host:port in a URL.
	Addr string

	l       net.Listener
	target  string
	mu      sync.Mutex
	open    []net.Conn
	schemas []string
	shut    bool
}

// StartProxy forwards 127.0.0.1:<free port> to target (host:port) until
// Shut; t's clean-up shuts it.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &Proxy{Addr: l.Addr().String(), l: l, target: target}
	go p.accept()
	t.Cleanup(p.Shut)
	return p
}

func (p *Proxy) accept() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return // Shut closed the listener
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			in.Close()
			out.Close()
			return
		}
		go func() { p.sniff(in, out); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// track records a connection pair, or reports false once the proxy is shut.
func (p *Proxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return false
	}
	p.open = append(p.open, in, out)
	return true
}

// sniff copies the client's bytes to the database, noting the search_path
// its PostgreSQL startup message asks for (sqlstore.Config.Schema): the
// schema a run created, which a test reads and drops once the run ended.
func (p *Proxy) sniff(in, out net.Conn) {
	buf := make([]byte, 4096)
	n, err := in.Read(buf)
	if n > 0 {
		p.noteSchema(buf[:n])
		if _, werr := out.Write(buf[:n]); werr != nil {
			return
		}
	}
	if err != nil {
		return
	}
	_, _ = io.Copy(out, in)
}

// noteSchema records the value after "search_path\x00" in a startup message.
func (p *Proxy) noteSchema(msg []byte) {
	_, rest, ok := bytes.Cut(msg, []byte("search_path\x00"))
	if !ok {
		return
	}
	schema, _, _ := bytes.Cut(rest, []byte{0})
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := string(schema); s != "" && !slices.Contains(p.schemas, s) {
		p.schemas = append(p.schemas, s)
	}
}

// Schemas returns every search_path a connection through the proxy asked
// for, in the order first seen (a sqlstore.Store asks for its Schema on
// every connection; connect with sslmode=disable, else the startup
// message is encrypted).
func (p *Proxy) Schemas() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.schemas)
}

// Shut stops accepting and cuts every connection through the proxy: from
// then on the database is away for its clients. Safe to call again.
func (p *Proxy) Shut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return
	}
	p.shut = true
	p.l.Close()
	for _, c := range p.open {
		c.Close()
	}
}

package sqlstore_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
)

// TestPostgresAwayMidRun: a store whose PostgreSQL goes away (here a proxy
// in front of it that the test shuts, with every connection through it)
// answers each call with an error wrapping store.ErrUnavailable, within the
// connect bound, never a hang and never a contract answer such as "not
// claimed".
func TestPostgresAwayMidRun(t *testing.T) {
	direct := postgresURL(t)
	u, err := url.Parse(direct)
	require.NoError(t, err)
	p := startProxy(t, u.Host)
	u.Host = p.addr
	s := openPostgres(t, direct) // its Drop cleans the schema up
	away, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: u.String(), Schema: s.Schema(),
		ConnectTimeout: time.Second})
	require.NoError(t, err)
	defer away.Close()
	_, err = away.Insert(t.Context(), store.Row{ID: "m", Kind: "birthday", Status: store.Queued})
	require.NoError(t, err)

	p.shut()
	calls := map[string]func(ctx context.Context) error{
		"Claim":       func(ctx context.Context) error { _, err := away.Claim(ctx, "m"); return err },
		"Get":         func(ctx context.Context) error { _, err := away.Get(ctx, "m"); return err },
		"QueueDue":    func(ctx context.Context) error { _, err := away.QueueDue(ctx, time.Now()); return err },
		"MarkSent":    func(ctx context.Context) error { return away.MarkSent(ctx, "m") },
		"InsertUsers": func(ctx context.Context) error { return away.InsertUsers(ctx, []store.User{{ID: "u", Email: "e"}}) },
	}
	for name, call := range calls {
		start := time.Now()
		err := call(t.Context())
		assert.ErrorIs(t, err, store.ErrUnavailable, name)
		assert.Less(t, time.Since(start), 5*time.Second, name)
		t.Log(name, err)
	}
	r, err := s.Get(t.Context(), "m")
	require.NoError(t, err)
	assert.Equal(t, store.Queued, r.Status, "nothing changed while away")
}

type proxy struct {
	addr string
	l    net.Listener
	mu   sync.Mutex
	open []net.Conn
}

// startProxy forwards 127.0.0.1:<free port> to target until shut.
func startProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{addr: l.Addr().String(), l: l}
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.open = append(p.open, in, out)
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(p.shut)
	return p
}

// shut stops accepting and cuts every connection through the proxy.
func (p *proxy) shut() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open {
		c.Close()
	}
}

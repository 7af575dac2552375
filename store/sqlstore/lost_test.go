package sqlstore_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
	"github.com/queuelab/qlab/store/storetest"
)

// TestPostgresAwayMidRun: a store whose PostgreSQL goes away (here a
// storetest.Proxy in front of it that the test shuts) answers each call
// with an error wrapping store.ErrUnavailable, within the connect bound,
// never a hang and never a contract answer such as "not claimed".
func TestPostgresAwayMidRun(t *testing.T) {
	direct := sqlstoretest.NeedPostgres(t)
	u, err := url.Parse(direct)
	require.NoError(t, err)
	p := storetest.StartProxy(t, u.Host)
	u.Host = p.Addr
	s := openPostgres(t, direct) // its Drop cleans the schema up
	away, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: u.String(), Schema: s.Schema(),
		ConnectTimeout: time.Second})
	require.NoError(t, err)
	defer away.Close()
	_, err = away.Insert(t.Context(), store.Row{ID: "m", Kind: "birthday", Status: store.Queued})
	require.NoError(t, err)

	p.Shut()
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

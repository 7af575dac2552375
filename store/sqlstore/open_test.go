package sqlstore_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
)

const secret = "S3cretXY"

// TestOpenFailsOnOneLineWithoutThePassword: every way QLAB_DATABASE_URL can
// be wrong gives one line, wrapping store.ErrUnavailable (the CLI's exit 1),
// that never shows the password, within the connect bound.
func TestOpenFailsOnOneLineWithoutThePassword(t *testing.T) {
	silent := silentServer(t)
	cases := map[string]struct{ url, says string }{
		"bad port":       {"postgres://qlab:" + secret + "@127.0.0.1:54x2/test", "does not parse"},
		"not a URL":      {"host=127.0.0.1 user=qlab password=" + secret, "is not a postgres:// or sqlite: URL"},
		"bad escape":     {"postgres://qlab:" + secret + "%zz@127.0.0.1/test", "does not parse"},
		"nothing there":  {"postgres://qlab:" + secret + "@" + closedPort(t) + "/test", "cannot open PostgreSQL at postgres://qlab:xxxxx@"},
		"never answers":  {"postgres://qlab:" + secret + "@" + silent + "/test", "cannot open PostgreSQL at postgres://qlab:xxxxx@"},
		"unknown option": {"postgres://qlab:" + secret + "@127.0.0.1/test?sslmode=maybe", "does not parse"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			s, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: c.url, ConnectTimeout: 500 * time.Millisecond})
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Less(t, time.Since(start), 5*time.Second, "bounded by ConnectTimeout")
			assert.ErrorIs(t, err, store.ErrUnavailable)
			msg := err.Error()
			t.Log(msg)
			assert.NotContains(t, msg, secret)
			assert.NotContains(t, msg, "\n")
			assert.Contains(t, msg, c.says)
		})
	}
}

// closedPort returns host:port where nothing listens.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// silentServer accepts connections and never says a word: a database that
// hangs in the handshake.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for _, c := range held {
			c.Close()
		}
	})
	return l.Addr().String()
}

func TestOpenSQLiteNeedsADirectory(t *testing.T) {
	_, err := sqlstore.Open(t.Context(), sqlstore.Config{})
	assert.ErrorIs(t, err, store.ErrUnavailable)
}

func TestOpenRefusesABadSchemaName(t *testing.T) {
	_, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: "postgres://127.0.0.1/test", Schema: "x; DROP TABLE users"})
	assert.ErrorIs(t, err, store.ErrUnavailable)
}

// TestSQLiteSurvivesTheProcess: what a second Open of the same file sees
// is what the first wrote (the map store loses it; Q20 shows the
// difference).
func TestSQLiteSurvivesTheProcess(t *testing.T) {
	url := "sqlite:" + filepath.Join(t.TempDir(), "q.db")
	first, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: url})
	require.NoError(t, err)
	_, err = first.Insert(t.Context(), store.Row{ID: "kept", Kind: "birthday", Status: store.Queued})
	require.NoError(t, err)
	require.NoError(t, first.Close())

	second, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: url})
	require.NoError(t, err)
	defer second.Drop(t.Context())
	r, err := second.Get(t.Context(), "kept")
	require.NoError(t, err)
	assert.Equal(t, store.Queued, r.Status)
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://qlab:" + secret + "@db:5432/test":     "postgres://qlab:xxxxx@db:5432/test",
		"postgres://qlab:p@ss@db/test":                    "postgres://qlab:xxxxx@db/test",
		"postgres://qlab@db/test":                         "postgres://qlab@db/test",
		"postgres://db/test?sslmode=disable":              "postgres://db/test?sslmode=disable",
		"postgres://qlab:" + secret + "@db:54x2/t%zz":     "postgres://qlab:xxxxx@db:54x2/t%zz",
		"postgresql://:" + secret + "@127.0.0.1:5432/tst": "postgresql://:xxxxx@127.0.0.1:5432/tst",
	} {
		got := sqlstore.Redact(in)
		assert.Equal(t, want, got, in)
		assert.False(t, strings.Contains(got, secret) || strings.Contains(got, "p@ss"), got)
	}
}

// TestSQLiteFileInAnyDirectory: a run's directory with a space, "%", "#"
// or "?" in its name holds the file (unescaped, SQLite's URI parsing would
// open another file, or cut the name at the "?").
func TestSQLiteFileInAnyDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a b%20c#d?e")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	s, err := sqlstore.Open(t.Context(), sqlstore.Config{Dir: dir})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "qlab.db"))
	require.NoError(t, err)
	require.NoError(t, s.Drop(t.Context()))
	_, err = os.Stat(filepath.Join(dir, "qlab.db"))
	assert.ErrorIs(t, err, os.ErrNotExist, "Drop removes the file")
}

func TestOpenSQLiteNeedsAPath(t *testing.T) {
	for _, url := range []string{"sqlite:", "sqlite://"} {
		_, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: url})
		assert.ErrorIs(t, err, store.ErrUnavailable, url)
	}
}

// TestOpenDropsTheSchemaItMadeWhenSetUpFails: a set-up that fails after
// CREATE SCHEMA returns no Store to Drop, so Open drops the schema it
// made (ci84 found one a busy run left); a schema that was there before
// it, a run's store being reopened, stays with its rows.
func TestOpenDropsTheSchemaItMadeWhenSetUpFails(t *testing.T) {
	url := sqlstoretest.NeedPostgres(t)
	fresh := fmt.Sprintf("qlabtest_%d_setup_fails", os.Getpid())
	t.Cleanup(func() { dropSchema(t, url, fresh) }) // should Open leave it
	s, err := sqlstore.OpenPostgresBroken(t.Context(), sqlstore.Config{URL: url, Schema: fresh})
	require.ErrorIs(t, err, store.ErrUnavailable)
	assert.Nil(t, s)
	assert.False(t, schemaExists(t, url, fresh), "the schema this Open made is gone")

	kept := openPostgres(t, url) // dropped by its clean-up
	_, err = kept.Insert(t.Context(), store.Row{ID: "kept", Kind: "birthday", Status: store.Queued})
	require.NoError(t, err)
	_, err = sqlstore.OpenPostgresBroken(t.Context(), sqlstore.Config{URL: url, Schema: kept.Schema()})
	require.ErrorIs(t, err, store.ErrUnavailable)
	_, err = kept.Get(t.Context(), "kept")
	assert.NoError(t, err, "a schema that was there before the failed Open keeps its rows")
}

// schemaExists reports whether the database at url has schema.
func schemaExists(t *testing.T, url, schema string) bool {
	var exists bool
	withConn(t, url, func(ctx context.Context, conn *pgx.Conn) error {
		const q = "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)"
		return conn.QueryRow(ctx, q, schema).Scan(&exists)
	})
	return exists
}

// dropSchema drops schema from the database at url, if it is there.
func dropSchema(t *testing.T, url, schema string) {
	withConn(t, url, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		return err
	})
}

// withConn runs do on a connection of its own to url, within 30 s.
func withConn(t *testing.T, url string, do func(context.Context, *pgx.Conn) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.NoError(t, do(ctx, conn))
}

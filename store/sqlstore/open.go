// Package sqlstore is the status store on SQL: SQLite embedded by default
// (modernc.org/sqlite, pure Go: no cgo, nothing to install) in a file under
// the run's directory, and PostgreSQL (pgx) when QLAB_DATABASE_URL points at
// one. Both keep store.Store's contract with the same SQL: a claim is one
// conditional UPDATE, an insert-if-absent is INSERT … ON CONFLICT DO NOTHING.
//
// It lives apart from package store so that the in-memory lessons, which
// use store.NewMemory or no store at all, never link a SQL driver.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/queuelab/qlab/lab/created"
	"github.com/queuelab/qlab/store"
)

// EnvURL names the environment variable that points the lab at a
// PostgreSQL database (postgres://user:pass@host:5432/db). Unset, the store
// is SQLite in a file.
const EnvURL = "QLAB_DATABASE_URL"

// DefaultConnectTimeout bounds how long Open waits for a database that does
// not answer.
const DefaultConnectTimeout = 5 * time.Second

// setupTimeout bounds creating the schema and the tables once PostgreSQL
// has answered: a database that answered is busy, not away. When the
// set-up shared ConnectTimeout with the connect, a test's store on a busy
// machine (make test, two cores kept busy, many schemas created at once)
// gave up after 5 s.
const setupTimeout = 30 * time.Second

// Config says which database Open opens.
type Config struct {
	// URL is empty for the embedded SQLite store, "postgres://…" (or
	// "postgresql://…") for PostgreSQL, or "sqlite:PATH" for SQLite in a
	// file of your choosing. Usually os.Getenv(EnvURL).
	URL string
	// Dir is the directory the embedded SQLite file is created in (the
	// run's temp dir) when URL is empty.
	Dir string
	// Schema is, on PostgreSQL, the schema the tables live in: created if
	// absent, so that runs and tests sharing one database do not see each
	// other's rows. Empty means the database's default (public). Lower-case
	// letters, digits and underscores only. SQLite ignores it. The store's
	// connections carry it as their application_name.
	Schema string
	// ConnectTimeout bounds connecting and the first query; zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

// Store is store.Store on a SQL database.
type Store struct {
	db     *sql.DB
	d      dialect
	schema string // PostgreSQL only
	path   string // SQLite only
}

var _ store.Store = (*Store)(nil)

// Open opens the database cfg names, creates the tables if absent and
// checks that it answers, within cfg.ConnectTimeout (PostgreSQL: its
// connect; creating its schema and tables then gets setupTimeout). A URL that does not
// parse, a database that is down or refuses: one line that never shows
// the password, wrapping store.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if strings.HasPrefix(cfg.URL, "postgres://") || strings.HasPrefix(cfg.URL, "postgresql://") {
		return openPostgres(ctx, cfg, postgres.schema()) // bounds its connect and its set-up apart
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	switch {
	case cfg.URL == "":
		if cfg.Dir == "" {
			return nil, fmt.Errorf("store: %w: no directory for the embedded SQLite file", store.ErrUnavailable)
		}
		return openSQLite(ctx, filepath.Join(cfg.Dir, "qlab.db"))
	case strings.HasPrefix(cfg.URL, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(cfg.URL, "sqlite:"), "//")
		if path == "" {
			return nil, fmt.Errorf("store: %w: %s=sqlite: names no file (want sqlite:PATH)", store.ErrUnavailable, EnvURL)
		}
		return openSQLite(ctx, path)
	}
	// Never echo a URL we cannot parse: its password may be anywhere in it.
	return nil, fmt.Errorf("store: %w: %s is not a postgres:// or sqlite: URL "+
		"(want postgres://user:pass@host:5432/db)", store.ErrUnavailable, EnvURL)
}

// openSQLite opens (creating) the SQLite file at path in WAL mode, where
// readers do not block the writer, with a busy timeout, so that a writer
// that finds the database locked waits its turn instead of failing; write
// transactions BEGIN IMMEDIATE, taking the write lock up front (a deferred
// one that read first could not wait for it: SQLITE_BUSY at once).
func openSQLite(ctx context.Context, path string) (*Store, error) {
	dsn := sqliteURI(path) + "?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: %w: SQLite at %s: %v", store.ErrUnavailable, path, err)
	}
	s := &Store{db: db, d: sqlite, path: path}
	if err := s.create(ctx, sqlite.schema()); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %w: SQLite at %s: %v", store.ErrUnavailable, path, err)
	}
	return s, nil
}

// sqliteURI is path as an SQLite file: URI, escaped, so that a directory
// with a space, "%", "?" or "#" in its name (a Windows user's, say) holds
// the file instead of changing which file is opened.
func sqliteURI(path string) string {
	p := filepath.ToSlash(path)
	if filepath.VolumeName(path) != "" {
		p = "/" + p // file:///C:/Users/…
	}
	return "file:" + (&url.URL{Path: p}).EscapedPath()
}

// maxPostgresConns caps one store's connections: the database is shared
// (max_connections is 100 by default), and more would only queue there.
const maxPostgresConns = 8

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// openPostgres connects with pgx through database/sql, its connect and a
// ping bounded by cfg.ConnectTimeout, then creates the schema and the
// tables (stmts) within setupTimeout, and keeps the tables in cfg.Schema.
func openPostgres(ctx context.Context, cfg Config, stmts []string) (*Store, error) {
	where := Redact(cfg.URL)
	if cfg.Schema != "" && !schemaName.MatchString(cfg.Schema) {
		return nil, fmt.Errorf("store: %w: schema %q: want lower-case letters, digits, _", store.ErrUnavailable, cfg.Schema)
	}
	if _, err := url.Parse(cfg.URL); err != nil {
		return nil, fmt.Errorf("store: %w: %s does not parse: %s", store.ErrUnavailable, EnvURL, parseReason(err, cfg.URL))
	}
	pc, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("store: %w: %s does not parse: %s", store.ErrUnavailable, EnvURL, redactIn(err.Error(), cfg.URL))
	}
	pc.ConnectTimeout = cfg.ConnectTimeout
	if cfg.Schema != "" {
		pc.RuntimeParams["search_path"] = cfg.Schema
		// Named after its schema, so a schema in use can be told from one
		// a killed run left (DropDeadSchemas).
		pc.RuntimeParams["application_name"] = cfg.Schema
	}
	s := &Store{db: stdlib.OpenDB(*pc), d: postgres, schema: cfg.Schema}
	s.db.SetMaxOpenConns(maxPostgresConns)
	if err := s.setUp(ctx, cfg.ConnectTimeout, stmts); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("store: %w: cannot open PostgreSQL at %s: %s (unset %s to use the embedded SQLite)",
			store.ErrUnavailable, where, oneLine(redactIn(connectReason(err).Error(), cfg.URL)), EnvURL)
	}
	return s, nil
}

// setUp pings the database within connect, then creates what the store
// needs within setupTimeout.
func (s *Store) setUp(ctx context.Context, connect time.Duration, stmts []string) error {
	pingCtx, cancel := context.WithTimeout(ctx, connect)
	err := s.db.PingContext(pingCtx)
	cancel()
	if err != nil {
		return err
	}
	ctx, cancel = context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	return s.create(ctx, stmts)
}

// parseReason is url.Parse's complaint without the URL it quotes.
func parseReason(err error, rawURL string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return redactIn(err.Error(), rawURL)
}

// connectReason is the last attempt's error when pgx tried several (TLS,
// then plain; each address): the others repeat it.
func connectReason(err error) error {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return err
	}
	inner := ce.Unwrap()
	if joined, ok := inner.(interface{ Unwrap() []error }); ok && len(joined.Unwrap()) > 0 {
		inner = joined.Unwrap()[len(joined.Unwrap())-1]
	}
	return inner
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// create makes the schema (PostgreSQL) and the tables (stmts) if absent.
// If that fails part-way (a statement fails, or ctx ends: a set-up cut
// short on a busy machine), a schema this call made is dropped again, as
// no Store comes back for the caller to Drop; one that was there before
// (a run reopening its store) stays.
func (s *Store) create(ctx context.Context, stmts []string) error {
	made, err := s.makeSchema(ctx)
	for _, stmt := range stmts {
		if err != nil {
			break
		}
		_, err = s.db.ExecContext(ctx, stmt)
	}
	if err != nil && made {
		s.unmakeSchema(ctx)
	}
	return err
}

// makeSchema creates Schema if absent and reports whether it was absent,
// so that a CREATE cut short still counts as this call's (the server may
// have run it). SQLite has none.
func (s *Store) makeSchema(ctx context.Context) (made bool, err error) {
	if s.schema == "" {
		return false, nil
	}
	created.Schema(s.schema) // under make test: found after a kill
	var existed bool
	err = s.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", s.schema).Scan(&existed)
	if err != nil {
		return false, err
	}
	_, err = s.db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+s.schema)
	return !existed, err
}

// unmakeSchema drops the schema create made, bounded on its own: ctx may
// be what ended the set-up. Should it fail too, make test's closing clean
// finds the schema (created.Schema).
func (s *Store) unmakeSchema(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultConnectTimeout)
	defer cancel()
	_, _ = s.db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+s.schema+" CASCADE")
}

// Schema is the PostgreSQL schema the tables live in (Config.Schema).
func (s *Store) Schema() string { return s.schema }

// Close implements store.Store: the data stays in the database.
func (s *Store) Close() error { return s.db.Close() }

// Drop closes the store and deletes what Open created: on PostgreSQL its
// Schema (refused for the default schema: another run's rows may live
// there), on SQLite the file and its WAL.
func (s *Store) Drop(ctx context.Context) error {
	if s.d == postgres {
		if s.schema == "" {
			s.db.Close()
			return errors.New("store: Drop needs a Schema of the run's own")
		}
		_, err := s.db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+s.schema+" CASCADE")
		return errors.Join(err, s.db.Close())
	}
	err := s.db.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if rmErr := os.Remove(s.path + suffix); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
	}
	return err
}

package atomicclaim

import (
	"context"
	"database/sql"
)

// DB is the part of *sql.DB a worker uses; the checker passes a real
// SQLite database (modernc.org/sqlite, ? placeholders) whose every call is
// one round trip. Its table is the status store's:
//
//	CREATE TABLE status (
//	    id         TEXT PRIMARY KEY,  -- the message
//	    kind       TEXT NOT NULL,     -- birthday or anniversary
//	    status     TEXT NOT NULL,     -- CREATED, QUEUED, SENDING, SENT, FAILED
//	    due_us     BIGINT NOT NULL,
//	    attempts   INTEGER NOT NULL DEFAULT 0,
//	    last_error TEXT NOT NULL DEFAULT '',
//	    updated_us BIGINT NOT NULL)
//
// Every message's row is QUEUED when its first copy arrives: the
// scheduler marked it so before it published.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Send sends the message's greeting through the mail API: one call, one
// email, nil when it went out. An error means no email went out.
type Send func(ctx context.Context) error

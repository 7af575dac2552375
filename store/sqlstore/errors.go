package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	modernc "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/queuelab/qlab/store"
)

// failed names the operation that failed with err. When err means the
// database went away (a lost connection, one that cannot be made, a server
// shutting down, a file that cannot be read), the result also wraps
// store.ErrUnavailable, so a lesson can tell "the database is away" (wait,
// or end the task lost with the reason) from a contract error.
func failed(err error, op string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(op, args...)
	if lostDatabase(err) {
		return fmt.Errorf("store: %s: %w: %w", what, store.ErrUnavailable, err)
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

// lostDatabase reports whether err says the database cannot be reached,
// rather than that a statement was wrong or a constraint refused it.
func lostDatabase(err error) bool {
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	switch {
	case errors.Is(err, context.Canceled):
		return false // the caller gave up: not the database's doing
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &netErr), errors.As(err, &connectErr), pgconn.Timeout(err):
		return true
	case errors.Is(err, pgconn.ErrConnClosed):
		// A pooled connection the server side closed, met before use:
		// database/sql hands it to Begin, and pgx's driver returns it as is.
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: shutdown, crash, starting up.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P0")
	}
	var liteErr *modernc.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() & 0xff {
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_BUSY:
			return true // BUSY: still locked after the busy timeout
		}
	}
	return false
}

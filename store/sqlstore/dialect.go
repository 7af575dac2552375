package sqlstore

import (
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	modernc "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is what differs between the two databases: the schema's few
// types, placeholders, and how a unique violation is reported. The
// statements themselves are the same.
type dialect int

const (
	sqlite dialect = iota
	postgres
)

// schema returns the CREATE statements. Times are Unix microseconds (the
// precision both databases keep); an outbox entry is pending while its
// relayed_us is NULL.
func (d dialect) schema() []string {
	seq := "INTEGER PRIMARY KEY AUTOINCREMENT"
	if d == postgres {
		seq = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	return []string{
		`CREATE TABLE IF NOT EXISTS status (
			id         TEXT PRIMARY KEY,
			kind       TEXT NOT NULL,
			status     TEXT NOT NULL,
			due_us     BIGINT NOT NULL,
			attempts   INTEGER NOT NULL DEFAULT 0,
			last_error TEXT NOT NULL DEFAULT '',
			updated_us BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS status_by_due ON status (status, due_us)`,
		`CREATE TABLE IF NOT EXISTS outbox (
			seq        ` + seq + `,
			id         TEXT NOT NULL,
			kind       TEXT NOT NULL,
			created_us BIGINT NOT NULL,
			relayed_us BIGINT)`,
		`CREATE TABLE IF NOT EXISTS users (
			id    TEXT PRIMARY KEY,
			name  TEXT NOT NULL,
			email TEXT NOT NULL UNIQUE)`,
	}
}

// bind rewrites the statement's ? placeholders for the dialect: PostgreSQL
// numbers them ($1, $2, …). No statement here has a ? inside a literal.
func (d dialect) bind(query string) string {
	if d == sqlite {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isUnique reports whether err is a unique (or primary key) violation.
func isUnique(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" // unique_violation
	}
	var liteErr *modernc.Error
	if errors.As(err, &liteErr) {
		code := liteErr.Code()
		return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queuelab/qlab/store"
)

const rowColumns = "id, kind, status, due_us, attempts, last_error, updated_us"

// exec runs one statement, its placeholders bound for the dialect.
func (s *Store) exec(ctx context.Context, q sqlExecer, query string, args ...any) (sql.Result, error) {
	return q.ExecContext(ctx, s.d.bind(query), args...)
}

// sqlExecer is a *sql.DB or a *sql.Tx.
type sqlExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func now() int64 { return time.Now().UnixMicro() }

// Insert implements store.Statuses: INSERT … ON CONFLICT DO NOTHING.
func (s *Store) Insert(ctx context.Context, r store.Row) (bool, error) {
	if r.Status == "" {
		r.Status = store.Created
	}
	res, err := s.exec(ctx, s.db, `INSERT INTO status (`+rowColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		r.ID, r.Kind, string(r.Status), r.Due.UnixMicro(), r.Attempts, r.LastError, now())
	if err != nil {
		return false, failed(err, "insert %q", r.ID)
	}
	return affected(res) == 1, nil
}

// Get implements store.Statuses.
func (s *Store) Get(ctx context.Context, id string) (store.Row, error) {
	row := s.db.QueryRowContext(ctx, s.d.bind(`SELECT `+rowColumns+` FROM status WHERE id = ?`), id)
	r, err := scanRow(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Row{}, fmt.Errorf("row %q: %w", id, store.ErrNotFound)
	}
	return r, failed(err, "get %q", id)
}

// QueueDue implements store.Statuses: one UPDATE … RETURNING, so two
// schedulers never both queue a row.
func (s *Store) QueueDue(ctx context.Context, until time.Time) ([]store.Row, error) {
	return s.queueDue(ctx, s.db, until)
}

func (s *Store) queueDue(ctx context.Context, q sqlExecer, until time.Time) ([]store.Row, error) {
	rows, err := q.QueryContext(ctx, s.d.bind(`UPDATE status SET status = 'QUEUED', updated_us = ?
		WHERE status = 'CREATED' AND due_us <= ? RETURNING `+rowColumns), now(), until.UnixMicro())
	if err != nil {
		return nil, failed(err, "queue due")
	}
	defer rows.Close()
	var due []store.Row
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, failed(err, "queue due")
		}
		due = append(due, r)
	}
	if err := rows.Err(); err != nil {
		return nil, failed(err, "queue due")
	}
	slices.SortFunc(due, func(a, b store.Row) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.ID, b.ID))
	})
	return due, nil
}

// Claim implements store.Statuses: UPDATE … WHERE id = ? AND status =
// 'QUEUED'; the database lets exactly one such update change the row.
func (s *Store) Claim(ctx context.Context, id string) (bool, error) {
	return s.move(ctx, id, store.Queued, store.Sending, "")
}

// Requeue implements store.Statuses.
func (s *Store) Requeue(ctx context.Context, id, reason string) error {
	return s.finish(ctx, id, store.Queued, reason)
}

// MarkSent implements store.Statuses.
func (s *Store) MarkSent(ctx context.Context, id string) error {
	return s.finish(ctx, id, store.Sent, "")
}

// MarkFailed implements store.Statuses.
func (s *Store) MarkFailed(ctx context.Context, id, reason string) error {
	return s.finish(ctx, id, store.Failed, reason)
}

// finish moves a SENDING row to status `to`, or says why it could not.
func (s *Store) finish(ctx context.Context, id string, to store.Status, reason string) error {
	moved, err := s.move(ctx, id, store.Sending, to, reason)
	if err == nil && !moved {
		err = fmt.Errorf("row %q: %w", id, store.ErrNotSending)
	}
	return err
}

// move changes the row from `from` to `to` in one conditional UPDATE and
// reports whether it did; reaching SENDING counts an attempt, a non-empty
// reason becomes last_error. When nothing changed, it tells a row in
// another status (false) from no row at all (ErrNotFound).
func (s *Store) move(ctx context.Context, id string, from, to store.Status, reason string) (bool, error) {
	attempt := 0
	if to == store.Sending {
		attempt = 1
	}
	res, err := s.exec(ctx, s.db, `UPDATE status
		SET status = ?, attempts = attempts + ?, last_error = COALESCE(NULLIF(?, ''), last_error), updated_us = ?
		WHERE id = ? AND status = ?`,
		string(to), attempt, reason, now(), id, string(from))
	if err != nil {
		return false, failed(err, "%s → %s %q", from, to, id)
	}
	if affected(res) == 1 {
		return true, nil
	}
	if _, err := s.Get(ctx, id); err != nil {
		return false, err
	}
	return false, nil
}

// Counts implements store.Statuses.
func (s *Store) Counts(ctx context.Context) (map[store.Status]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT status, COUNT(*) FROM status GROUP BY status`)
	if err != nil {
		return nil, failed(err, "counts")
	}
	defer rows.Close()
	counts := make(map[store.Status]int, len(store.AllStatuses))
	for _, st := range store.AllStatuses {
		counts[st] = 0
	}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, failed(err, "counts")
		}
		counts[store.Status(st)] = n
	}
	return counts, failed(rows.Err(), "counts")
}

// scanRow reads one row of rowColumns.
func scanRow(sc interface{ Scan(...any) error }) (store.Row, error) {
	var r store.Row
	var status string
	var due, updated int64
	if err := sc.Scan(&r.ID, &r.Kind, &status, &due, &r.Attempts, &r.LastError, &updated); err != nil {
		return store.Row{}, err
	}
	r.Status, r.Due, r.Updated = store.Status(status), time.UnixMicro(due), time.UnixMicro(updated)
	return r, nil
}

// affected is the statement's row count; both drivers always report it.
func affected(res sql.Result) int64 {
	n, _ := res.RowsAffected()
	return n
}

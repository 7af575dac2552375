package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/queuelab/qlab/store"
)

// QueueDueToOutbox implements store.Outbox: the rows' UPDATE and their
// outbox entries commit together or not at all.
func (s *Store) QueueDueToOutbox(ctx context.Context, until time.Time) ([]store.Row, error) {
	var due []store.Row
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if due, err = s.queueDue(ctx, tx, until); err != nil {
			return err
		}
		for _, r := range due {
			if _, err := s.exec(ctx, tx, `INSERT INTO outbox (id, kind, created_us) VALUES (?, ?, ?)`,
				r.ID, r.Kind, r.Updated.UnixMicro()); err != nil {
				return failed(err, "outbox entry for %q", r.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return due, nil
}

// PendingOutbox implements store.Outbox.
func (s *Store) PendingOutbox(ctx context.Context, limit int) ([]store.OutboxEntry, error) {
	if limit < 1 {
		return nil, nil // PostgreSQL refuses a negative LIMIT
	}
	rows, err := s.db.QueryContext(ctx, s.d.bind(`SELECT seq, id, kind, created_us FROM outbox
		WHERE relayed_us IS NULL ORDER BY seq LIMIT ?`), limit)
	if err != nil {
		return nil, failed(err, "pending outbox")
	}
	defer rows.Close()
	var pending []store.OutboxEntry
	for rows.Next() {
		var e store.OutboxEntry
		var created int64
		if err := rows.Scan(&e.Seq, &e.ID, &e.Kind, &created); err != nil {
			return nil, failed(err, "pending outbox")
		}
		e.Created = time.UnixMicro(created)
		pending = append(pending, e)
	}
	return pending, failed(rows.Err(), "pending outbox")
}

// MarkRelayed implements store.Outbox.
func (s *Store) MarkRelayed(ctx context.Context, seq int64) error {
	res, err := s.exec(ctx, s.db, `UPDATE outbox SET relayed_us = ? WHERE seq = ? AND relayed_us IS NULL`, now(), seq)
	if err != nil {
		return failed(err, "mark relayed %d", seq)
	}
	if affected(res) == 1 {
		return nil
	}
	var one int
	err = s.db.QueryRowContext(ctx, s.d.bind(`SELECT 1 FROM outbox WHERE seq = ?`), seq).Scan(&one)
	if err == sql.ErrNoRows {
		return fmt.Errorf("outbox entry %d: %w", seq, store.ErrNotFound)
	}
	return failed(err, "mark relayed %d", seq)
}

// inTx runs f in one transaction (BEGIN IMMEDIATE on SQLite: see
// openSQLite), committing if f returns nil.
func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return failed(err, "begin")
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return failed(err, "commit")
	}
	return nil
}

package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/queuelab/qlab/store"
)

// usersPerStatement keeps a multi-row INSERT's parameters (3 a user) well
// under both databases' limits (SQLite 32766, PostgreSQL 65535).
const usersPerStatement = 500

// InsertUsers implements store.Users: multi-row INSERTs in one transaction,
// so one taken email rolls the whole batch back.
func (s *Store) InsertUsers(ctx context.Context, users []store.User) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for start := 0; start < len(users); start += usersPerStatement {
			chunk := users[start:min(start+usersPerStatement, len(users))]
			values := strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(chunk)), ", ")
			args := make([]any, 0, 3*len(chunk))
			for _, u := range chunk {
				args = append(args, u.ID, u.Name, u.Email)
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO users (id, name, email) VALUES `+values, args...); err != nil {
				if isUnique(err) {
					return fmt.Errorf("store: insert %d users: %w: %v", len(users), store.ErrDuplicate, err)
				}
				return failed(err, "insert %d users", len(users))
			}
		}
		return nil
	})
}

// InsertUsersSkipping implements store.Users: one INSERT … ON CONFLICT DO
// NOTHING a user, in one transaction; a user no row was added for was
// skipped.
func (s *Store) InsertUsersSkipping(ctx context.Context, users []store.User) ([]int, error) {
	var skipped []int
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		skipped = nil
		stmt, err := tx.PrepareContext(ctx, s.d.bind(`INSERT INTO users (id, name, email) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`))
		if err != nil {
			return failed(err, "insert users")
		}
		defer stmt.Close()
		for i, u := range users {
			res, err := stmt.ExecContext(ctx, u.ID, u.Name, u.Email)
			if err != nil {
				return failed(err, "insert user %q", u.ID)
			}
			if affected(res) == 0 {
				skipped = append(skipped, i)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return skipped, nil
}

// CountUsers implements store.Users.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n); err != nil {
		return 0, failed(err, "count users")
	}
	return n, nil
}

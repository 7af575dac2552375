package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/store"
)

// TestFailedTellsAwayFromContract: what a lost database looks like wraps
// store.ErrUnavailable, what a refused statement looks like does not.
// "conn closed" is what Begin returned on a pooled connection whose
// PostgreSQL had gone (TestPostgresAwayMidRun, once in a busy fresh-clone
// run): it was taken for a contract error.
func TestFailedTellsAwayFromContract(t *testing.T) {
	away := []error{
		fmt.Errorf("begin: %w", pgconn.ErrConnClosed),
		&pgconn.PgError{Code: "57P01"}, // admin shutdown
		&pgconn.PgError{Code: "08006"}, // connection failure
	}
	for _, err := range away {
		assert.ErrorIs(t, failed(err, "begin"), store.ErrUnavailable, "%v", err)
	}
	contract := []error{
		&pgconn.PgError{Code: "23505"}, // unique violation
		errors.New("no rows"),
		context.Canceled,
	}
	for _, err := range contract {
		assert.NotErrorIs(t, failed(err, "insert"), store.ErrUnavailable, "%v", err)
	}
}

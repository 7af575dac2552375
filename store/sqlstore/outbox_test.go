package sqlstore_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
)

// TestOutboxIsAllOrNothing: when one outbox entry cannot be written (a
// trigger refuses it), QueueDueToOutbox fails and no row is left QUEUED
// without its entry: the half-done state the outbox exists to prevent.
func TestOutboxIsAllOrNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	s, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: "sqlite:" + path})
	require.NoError(t, err)
	defer s.Drop(t.Context())
	due := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "poison", "z"} {
		_, err := s.Insert(t.Context(), store.Row{ID: id, Kind: "birthday", Due: due})
		require.NoError(t, err)
	}

	raw, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000")
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.ExecContext(t.Context(), `CREATE TRIGGER refuse BEFORE INSERT ON outbox
		WHEN NEW.id = 'poison' BEGIN SELECT RAISE(ABORT, 'refused'); END`)
	require.NoError(t, err)

	_, err = s.QueueDueToOutbox(t.Context(), due)
	require.ErrorContains(t, err, "refused")
	counts, err := s.Counts(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 3, counts[store.Created], "every row still CREATED: the scheduler will pick them again")
	pending, err := s.PendingOutbox(t.Context(), 10)
	require.NoError(t, err)
	assert.Empty(t, pending)

	_, err = raw.ExecContext(t.Context(), `DROP TRIGGER refuse`)
	require.NoError(t, err)
	queued, err := s.QueueDueToOutbox(t.Context(), due)
	require.NoError(t, err)
	assert.Len(t, queued, 3)
	pending, err = s.PendingOutbox(t.Context(), 10)
	require.NoError(t, err)
	assert.Len(t, pending, 3)
}

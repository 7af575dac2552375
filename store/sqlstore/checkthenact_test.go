package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
	"github.com/queuelab/qlab/store/storetest"
)

// sqlCheckThenAct is the claim written as two statements on a real
// database: SELECT the status, and if it is QUEUED, UPDATE the row by id
// alone. No Gosched is needed to lose: the round trip between the two is
// the window.
type sqlCheckThenAct struct {
	*sqlstore.Store
	db     *sql.DB
	update string
}

func (s sqlCheckThenAct) Claim(ctx context.Context, id string) (bool, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r.Status != store.Queued {
		return false, err
	}
	_, err = s.db.ExecContext(ctx, s.update, id)
	return err == nil, err
}

// TestClaimRaceCatchesSQLCheckThenAct: the suite's claim check catches
// the two-statement claim on SQLite and on PostgreSQL.
func TestClaimRaceCatchesSQLCheckThenAct(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "q.db")
		s, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: "sqlite:" + path})
		require.NoError(t, err)
		defer s.Drop(context.Background())
		db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000")
		require.NoError(t, err)
		defer db.Close()
		requireCaught(t, sqlCheckThenAct{s, db, "UPDATE status SET status = 'SENDING' WHERE id = ?"})
	})
	t.Run("postgres", func(t *testing.T) {
		url := sqlstoretest.NeedPostgres(t)
		s := openPostgres(t, url)
		db := sql.OpenDB(stdlib.GetConnector(mustParse(t, url, s.Schema())))
		defer db.Close()
		requireCaught(t, sqlCheckThenAct{s, db, "UPDATE status SET status = 'SENDING' WHERE id = $1"})
	})
}

func requireCaught(t *testing.T, wrong store.Store) {
	caught := 0
	for i := range 5 {
		if err := storetest.CheckClaimRace(t.Context(), wrong, fmt.Sprintf("r%d", i)); err != nil {
			t.Log(err)
			caught++
		}
	}
	assert.Positive(t, caught, "a check-then-act claim passed the claim race")
}

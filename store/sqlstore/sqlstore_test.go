package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
	"github.com/queuelab/qlab/store/storetest"
)

func TestSQLiteContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openSQLite(t) })
}

func TestPostgresContract(t *testing.T) {
	url := sqlstoretest.NeedPostgres(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openPostgres(t, url) })
}

// openSQLite opens a store in a file of the test's own, removed after.
func openSQLite(t testing.TB) *sqlstore.Store {
	s, err := sqlstore.Open(t.Context(), sqlstore.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Drop(context.Background())) })
	return s
}

var schemas atomic.Int64

// openPostgres opens a store in a schema of the test's own, dropped after.
func openPostgres(t testing.TB, url string) *sqlstore.Store {
	schema := fmt.Sprintf("qlabtest_%d_%d", os.Getpid(), schemas.Add(1))
	s, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: url, Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Drop(context.Background())) })
	return s
}

// mustParse is url as a pgx config whose connections use schema.
func mustParse(t *testing.T, url, schema string) pgx.ConnConfig {
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["search_path"] = schema
	return *cfg
}

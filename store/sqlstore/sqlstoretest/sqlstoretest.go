// Package sqlstoretest finds the PostgreSQL that tests of the SQL store
// run on, as rabbittest finds the broker: one rule for every package
// that needs a real database.
package sqlstoretest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/queuelab/qlab/store/sqlstore"
)

// RequireEnv, set to 1 (CI), makes a test that finds no PostgreSQL fail
// instead of skip, so the SQL half can never pass by skipping.
const RequireEnv = "QLAB_REQUIRE_DB"

// Lacking ends t for want of PostgreSQL, saying why: it skips, or fails
// under RequireEnv=1.
func Lacking(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// NeedPostgres returns QLAB_DATABASE_URL (sqlstore.EnvURL) once PostgreSQL
// answers there: a probe schema is created and dropped. Without one it
// ends t as Lacking says.
func NeedPostgres(t testing.TB) string {
	t.Helper()
	url := os.Getenv(sqlstore.EnvURL)
	if url == "" {
		Lacking(t, "PostgreSQL: %s is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)",
			sqlstore.EnvURL)
	}
	probe := fmt.Sprintf("qlabtest_%d_probe", os.Getpid())
	s, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: url, Schema: probe})
	if err != nil {
		Lacking(t, "PostgreSQL: %v", err)
	}
	if err := s.Drop(context.Background()); err != nil {
		t.Fatalf("dropping the probe schema %s: %v", probe, err)
	}
	return url
}

package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
)

// BenchmarkInsertUsers measures seed 004's batching: one transaction for a
// batch of 1000 users against one transaction a user (what a consumer that
// inserts each message as it comes does), on SQLite and on PostgreSQL
// (skipped without QLAB_DATABASE_URL). Compare the users/s of the two; Q23
// prints the ratio it measured.
//
//	go test -run '^$' -bench InsertUsers ./store/sqlstore/
func BenchmarkInsertUsers(b *testing.B) {
	const batch = 1000
	dbs := map[string]func(b *testing.B) store.Store{
		"sqlite":   func(b *testing.B) store.Store { return openSQLite(b) },
		"postgres": func(b *testing.B) store.Store { return openPostgres(b, sqlstoretest.NeedPostgres(b)) },
	}
	inserts := map[string]func(b *testing.B, s store.Store, users []store.User){
		"batch": func(b *testing.B, s store.Store, users []store.User) {
			require.NoError(b, s.InsertUsers(b.Context(), users))
		},
		"one-per-row": func(b *testing.B, s store.Store, users []store.User) {
			for _, u := range users {
				require.NoError(b, s.InsertUsers(b.Context(), []store.User{u}))
			}
		},
	}
	for _, db := range []string{"sqlite", "postgres"} {
		for _, how := range []string{"batch", "one-per-row"} {
			b.Run(db+"/"+how, func(b *testing.B) {
				s := dbs[db](b)
				round := 0
				start := time.Now()
				for b.Loop() {
					inserts[how](b, s, newUsers(round, batch))
					round++
				}
				b.ReportMetric(float64(round*batch)/time.Since(start).Seconds(), "users/s")
			})
		}
	}
}

func newUsers(round, n int) []store.User {
	users := make([]store.User, n)
	for i := range users {
		id := fmt.Sprintf("r%d-u%d", round, i)
		users[i] = store.User{ID: id, Name: "User " + id, Email: id + "@example.com"}
	}
	return users
}

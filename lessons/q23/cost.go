package q23

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/store"
)

// BenchUsers is how many users MeasureInserts stores each way.
const BenchUsers = 200

// InsertCost is what storing n users took on a real database, in real
// time: one transaction for all of them, against one a user.
type InsertCost struct {
	Users         int
	Batch, Single time.Duration
}

// Ratio is how many times faster the batch was.
func (c InsertCost) Ratio() float64 { return float64(c.Single) / float64(c.Batch) }

// MeasureInserts stores n users as one batch and n more one insert each
// (what a consumer without batching does), timing both on the wall clock:
// the cost is the database's, not the lesson's.
func MeasureInserts(ctx context.Context, db store.Users, n int) (InsertCost, error) {
	users := func(prefix string) []store.User {
		us := make([]store.User, n)
		for i := range us {
			id := fmt.Sprintf("%s%03d", prefix, i+1)
			us[i] = store.User{ID: id, Name: "User " + id, Email: id + "@email.com"}
		}
		return us
	}
	c := InsertCost{Users: n}
	start := time.Now()
	if err := db.InsertUsers(ctx, users("bench-batch-")); err != nil {
		return c, err
	}
	c.Batch = time.Since(start)
	start = time.Now()
	for _, u := range users("bench-single-") {
		if err := db.InsertUsers(ctx, []store.User{u}); err != nil {
			return c, err
		}
	}
	c.Single = time.Since(start)
	return c, nil
}

// costTable is what a batch saves, measured in this run.
func costTable(c InsertCost, db string) render.Table {
	return render.Table{
		Title:  fmt.Sprintf("What a batch saves on %s, measured in this run", db),
		Header: []string{"insert", "users", "wall time", "users/s"},
		Rows: [][]string{
			{"one batch, one transaction", fmt.Sprint(c.Users), c.Batch.Round(time.Microsecond).String(),
				fmt.Sprintf("%.0f", float64(c.Users)/c.Batch.Seconds())},
			{"one transaction a user", fmt.Sprint(c.Users), c.Single.Round(time.Microsecond).String(),
				fmt.Sprintf("%.0f", float64(c.Users)/c.Single.Seconds())},
		},
		Notes: []string{fmt.Sprintf("Batching was %.1f× faster here (one run, real time). "+
			"go test -bench Consumer ./lessons/q23/ measures the batching consumer against one "+
			"insert a message on SQLite and PostgreSQL.", c.Ratio())},
	}
}

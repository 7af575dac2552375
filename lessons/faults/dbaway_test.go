package faults

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver: the test reads the run's rows

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/store/sqlstore"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
	"github.com/queuelab/qlab/store/storetest"
)

// dbAwayBound is how long a run whose database went away may take: the
// store's connect bound (sqlstore.DefaultConnectTimeout) per call that
// finds it away, well within the suite's run bound.
const dbAwayBound = runBound

// databaseAway runs each store lesson (Lesson.Store) on the run node with
// its store on PostgreSQL behind a storetest.Proxy, and at a seeded event
// of the run cuts every connection through the proxy and refuses new
// ones, for the rest of the run: the database away mid-run (issue 21).
// The run may end with an error, but within its bound, every task
// accounted for (lost or dead-lettered only with the reason), none left
// pending, and no row marked SENT whose message no worker began to send. Each case checks
// that the run really reached its database through the proxy, so a
// lesson that says Store and stops using one fails here instead of
// passing untested.
func databaseAway(t *testing.T) {
	n := runNode.get(t) // skips under -short, before PostgreSQL is asked for
	direct := proxiedURL(t)
	var ls []lesson.Lesson
	var names []string
	for _, l := range lessons.All {
		if l.Store {
			if l.Rabbit == nil {
				t.Fatalf("%s says Store but has no broker run", l.ID)
			}
			ls = append(ls, l)
			names = append(names, l.Slug())
		}
	}
	if len(ls) == 0 {
		t.Fatal("no lesson says Store: the database-away fault has no case")
	}
	concurrently(t, names, func(t *testing.T, i int) {
		runDatabaseAway(t, n, direct, ls[i], 3+int(seed()*7+uint64(i)*5)%30)
	})
}

// runDatabaseAway runs l on n with its database behind a proxy to direct
// that is shut at the at-th event.
func runDatabaseAway(t *testing.T, n *rabbittest.Node, direct string, l lesson.Lesson, at int) {
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	p := storetest.StartProxy(t, u.Host)
	u.Host = p.Addr
	db, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer dropSchemas(t, db, p)

	ctx, cancel := context.WithTimeout(context.Background(), dbAwayBound)
	defer cancel()
	runNames := rabbit.RunNames()
	tr := newTrigger(at)
	tr.fire = func(lab.Event) { p.Shut(); tr.done <- nil }
	speed := l.TestSpeed
	if speed == 0 {
		speed = 20
	}
	start := time.Now()
	opts := lesson.Options{Backend: lab.Rabbit, Broker: n.URL, Speed: speed,
		Names: rabbitenv.Of(runNames), Database: u.String(), Pause: tr.pause, Logger: slog.New(warnings)}
	_, runErr := lesson.Run(ctx, l, opts, tr)
	took := time.Since(start)
	events := tr.Events()
	c := tallyOf(events)
	report(t, fmt.Sprintf("fault=%-7s lesson=%s %s %.1fs%s", "dbaway", l.Slug(), c, took.Seconds(), errNote(runErr)))

	if tr.count < at {
		t.Fatalf("the run emitted %d events, never reaching the fault's moment (%d)", tr.count, at)
	}
	if ctx.Err() != nil {
		t.Errorf("the run hung: it was still going after %v", dbAwayBound)
	}
	if len(p.Schemas()) == 0 {
		t.Fatalf("the run never reached its database through %s (Options.Database)", p.Addr)
	}
	logLost(t, events)
	labtest.AssertAccounted(t, events)
	if c.lostNoReason > 0 {
		t.Errorf("%d tasks lost without a reason", c.lostNoReason)
	}
	if c.pending > 0 {
		t.Errorf("%d tasks left pending: the run must say what became of each", c.pending)
	}
	assertDeadWithReason(t, events)
	assertSentWereSent(t, db, p.Schemas(), events)
	assertNoLeftovers(t, n, l, runNames)
}

// proxiedURL is the PostgreSQL URL the fault's proxy can stand in front
// of (sqlstoretest.NeedPostgres, with sslmode=disable: the proxy reads
// each run's schema from the startup message).
func proxiedURL(t *testing.T) string {
	t.Helper()
	direct := sqlstoretest.NeedPostgres(t)
	if !strings.Contains(direct, "sslmode=disable") {
		sqlstoretest.Lacking(t, "the database-away fault needs %s with sslmode=disable", sqlstore.EnvURL)
	}
	return direct
}

// dropSchemas drops each schema a run asked for through p: the run's own
// Drop could not, its database being away.
func dropSchemas(t *testing.T, db *sql.DB, p *storetest.Proxy) {
	for _, s := range p.Schemas() {
		if !strings.HasPrefix(s, "qlab_") {
			t.Errorf("the run used schema %q, not one of its own (qlab_…)", s)
			continue
		}
		if _, err := db.Exec("DROP SCHEMA IF EXISTS " + s + " CASCADE"); err != nil {
			t.Errorf("dropping the run's schema %s: %v", s, err)
		}
	}
}

// assertDeadWithReason fails t for a task dead-lettered with no reason: a
// dead_lettered or failed event of it with a note.
func assertDeadWithReason(t *testing.T, events []lab.Event) {
	t.Helper()
	reason := map[string]bool{}
	for _, e := range events {
		if (e.Kind == lab.DeadLettered || e.Kind == lab.Failed) && e.Note != "" {
			reason[e.Task] = true
		}
	}
	for _, e := range labtest.OfKind(events, lab.Summary) {
		if e.Fate == lab.FateDead && !reason[e.Task] {
			t.Errorf("task %s dead-lettered without a reason", e.Task)
		}
	}
}

// assertSentWereSent fails t for a row some schema holds as SENT whose
// message no worker began to send: no task of that row (its id, or a
// copy id~n) has a started event. A send whose MarkSent was cut off may
// leave the row SENDING, never the other way round.
func assertSentWereSent(t *testing.T, db *sql.DB, schemas []string, events []lab.Event) {
	t.Helper()
	started := map[string]bool{}
	for _, e := range labtest.OfKind(events, lab.Started) {
		id, _, _ := strings.Cut(e.Task, "~")
		started[id] = true
	}
	for _, s := range schemas {
		rows, err := db.Query("SELECT id FROM " + s + ".status WHERE status = 'SENT'")
		if err != nil {
			if strings.Contains(err.Error(), "does not exist") {
				continue // the run's database went away before it made the table
			}
			t.Fatalf("reading %s.status: %v", s, err)
		}
		var sent []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, id)
		}
		rows.Close()
		for _, id := range sent {
			if !started[id] {
				t.Errorf("row %s (schema %s) is SENT, but no worker began to send it", id, s)
			}
		}
		t.Logf("schema %s: %d rows SENT, each begun by a worker", s, len(sent))
	}
}

//go:build qlabex

package atomicclaim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
)

// The lesson-time costs of the world: one statement's round trip to the
// database and one call to the mail API.
const (
	roundTrip = 5 * time.Millisecond
	sendTime  = 100 * time.Millisecond
)

// hotLoop is how many deliveries of one message the checker allows before
// it parks the message itself: a failed send requeued for ever would
// otherwise spin.
const hotLoop = 10

// publish is one publish by the scheduler: message id at lesson time at.
type publish struct {
	at time.Duration
	id string
}

// scenario is one plan: what the scheduler publishes and when, the
// message published twice at once, the one whose copy comes after it was
// sent, and the one whose first send fails.
type scenario struct {
	name                      string
	publishes                 []publish
	together, late, firstFail string
}

// Two workers are idle whenever two copies are published together, so each
// takes one at the same instant: both claims run at once.
var scenarios = []scenario{
	{name: "the scheduler ran twice (A1 at once, A2 late, A3's first send fails)",
		publishes: []publish{{0, "A1"}, {0, "A1"}, {time.Second, "A2"}, {2 * time.Second, "A2"},
			{2 * time.Second, "A3"}, {3 * time.Second, "A4"}},
		together: "A1", late: "A2", firstFail: "A3"},
	{name: "another tick (B1's first send fails, B2 at once, B3 late)",
		publishes: []publish{{0, "B1"}, {500 * time.Millisecond, "B2"}, {500 * time.Millisecond, "B2"},
			{1500 * time.Millisecond, "B3"}, {2500 * time.Millisecond, "B4"},
			{2500 * time.Millisecond, "B3"}, {3500 * time.Millisecond, "B5"}},
		together: "B2", late: "B3", firstFail: "B1"},
}

func (sc scenario) plan() check.Named {
	var p lab.Plan
	seen := map[string]bool{}
	for _, pub := range sc.publishes {
		if !seen[pub.id] {
			seen[pub.id] = true
			p.Tasks = append(p.Tasks, pub.id)
		}
	}
	return check.Named{Name: sc.name, Plan: p}
}

func TestAtomicClaim(t *testing.T) {
	c := check.New(t)
	for _, sc := range scenarios {
		w := &world{sc: sc, dir: t.TempDir(), sends: map[string]int{}, deliveries: map[string]int{},
			copies: map[string]int{},
			failed: map[string]bool{}, status: map[string]store.Status{}}
		r := check.InMem(t, sc.plan(), w.run)
		c.Accounted(r, lab.FateDone)
		c.Expect(r, "a copy of a message already SENT is skipped, not sent again",
			fmt.Sprintf("%s, its copy published after it was sent: %s", sc.late, sends(w.sends[sc.late])),
			fmt.Sprintf("%s, its copy published after it was sent: %s", sc.late, sends(1)), sc.late)
		c.Expect(r, "two copies at once: exactly one claim wins, the other copy is skipped",
			fmt.Sprintf("%s, two copies in two workers at once: %s", sc.together,
				sends(w.sends[sc.together])),
			fmt.Sprintf("%s, two copies in two workers at once: %s", sc.together, sends(1)), sc.together)
		c.That(r, "the mail API sends only while the row is SENDING (claimed, not yet SENT)",
			w.unclaimed == "", w.unclaimed, "every send finds its row SENDING", w.unclaimedTask)
		id := sc.firstFail
		c.Expect(r, "a failed send hands the row back (QUEUED): the next delivery claims and sends it",
			fmt.Sprintf("%s, after its first send failed: %s, its row %s", id, sends(w.sends[id]),
				w.status[id]),
			fmt.Sprintf("%s, after its first send failed: %s, its row SENT", id, sends(1)), id)
		for _, id := range r.Plan.Tasks {
			c.Expect(r, "every message sent once, its row SENT in the store",
				fmt.Sprintf("%s: %s, its row %s", id, sends(w.sends[id]), w.status[id]),
				fmt.Sprintf("%s: %s, its row SENT", id, sends(1)), id)
		}
	}
}

// world is one run: Q18's topology in memory, two workers running the
// student's Handle, a SQLite status store and a mail API that counts.
type world struct {
	sc   scenario
	dir  string
	st   *lab.Stream
	db   *sql.DB         // the student's: one connection, every call a round trip
	rows *sqlstore.Store // the checker's view of the same file

	mu                       sync.Mutex
	sends                    map[string]int // message → emails the mail API sent
	deliveries               map[string]int
	copies                   map[string]int  // published and not yet acked or parked
	failed                   map[string]bool // the message's planned first failure happened
	unclaimed, unclaimedTask string          // the first send whose row was not SENDING
	status                   map[string]store.Status
}

// run opens the store, runs the scheduler's publishes through two
// workers, reads every row and closes the store.
func (w *world) run(ctx context.Context, s *lab.Stream) error {
	w.st = s
	path := filepath.Join(w.dir, "status.db")
	rows, err := sqlstore.Open(ctx, sqlstore.Config{URL: "sqlite:" + path})
	if err != nil {
		return err
	}
	w.rows = rows
	defer rows.Close()
	for _, id := range w.sc.plan().Plan.Tasks {
		if _, err := rows.Insert(ctx, store.Row{ID: id, Kind: w.kind(id), Status: store.Queued}); err != nil {
			return err
		}
	}
	if w.db, err = sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000"); err != nil {
		return err
	}
	defer w.db.Close()
	w.db.SetMaxOpenConns(1) // one connection: statements run in the order their round trips end
	err = w.publishAll(ctx)
	for _, id := range w.sc.plan().Plan.Tasks {
		r, gerr := rows.Get(ctx, id)
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		w.status[id] = r.Status
	}
	return err
}

// kind is message id's routing key: the scenario's messages are
// birthdays and anniversaries in turn.
func (w *world) kind(id string) string {
	for i, t := range w.sc.plan().Plan.Tasks {
		if t == id {
			return [...]string{"birthday", "anniversary"}[i%2]
		}
	}
	return "birthday"
}

// publishAll starts the two workers on an in-memory flow, publishes as
// the scenario says and waits until every copy is settled.
func (w *world) publishAll(ctx context.Context) error {
	b := inmem.NewFlow(ctx, w.st, len(w.sc.publishes)+1)
	defer b.Close(context.Background())
	if err := b.Declare(ctx, birthday.Topology()); err != nil {
		return err
	}
	for _, actor := range []string{"Worker-1", "Worker-2"} {
		c := flow.Consumer{Queue: birthday.Queue, Actor: actor, Prefetch: 1, Handle: w.handler(actor)}
		if err := b.Consume(ctx, c); err != nil {
			return err
		}
	}
	clock := w.st.Clock()
	for _, p := range w.sc.publishes {
		if err := clock.Wait(ctx, p.at-clock.Elapsed()); err != nil {
			return err
		}
		w.mu.Lock()
		w.copies[p.id]++
		w.mu.Unlock()
		if err := b.PublishTo(ctx, birthday.Scheduler, birthday.Exchange, w.kind(p.id), p.id); err != nil {
			return err
		}
	}
	return b.Wait(ctx)
}

// handler runs the student's Handle on one delivery and reports it: sent,
// skipped (no send), failed (requeued at once: Q19 is about the wait).
func (w *world) handler(actor string) flow.Handler {
	return func(ctx context.Context, d *flow.Delivery) flow.Decision {
		e := d.Event(actor)
		w.mu.Lock()
		w.deliveries[d.Task]++
		n := w.deliveries[d.Task]
		w.mu.Unlock()
		if n > hotLoop {
			w.settled(d.Task)
			return flow.Park(birthday.DLQ, fmt.Sprintf("stopped by the checker: delivered %d times", n))
		}
		e.Kind = lab.Started
		w.st.Emit(e)
		db := &roundTrips{db: w.db, clock: w.st.Clock()}
		call := &sendCall{}
		send := func(ctx context.Context) error { return w.send(ctx, actor, d.Task, call) }
		err := Handle(ctx, db, d.Task, send)
		e.Note = "statements: " + db.String()
		switch {
		case err != nil:
			e.Kind, e.Note = lab.Failed, err.Error()+"; "+e.Note
			w.st.Emit(e)
			return flow.Requeue()
		case call.made && call.err != nil:
			e.Kind, e.Note = lab.Lost, "the send failed but Handle returned nil: acked, never sent; "+e.Note
		case call.made:
			e.Kind = lab.Succeeded
		case w.lastHope(d.Task):
			e.Kind, e.Note = lab.Lost, "skipped, but no copy sent it and none is left to: "+e.Note
		default:
			e.Kind, e.Note = lab.Duplicate, "not sent by this copy; "+e.Note
		}
		w.st.Emit(e)
		w.settled(d.Task)
		return flow.Ack()
	}
}

// lastHope reports whether a copy of message id that does not send it
// loses it: none was sent, and no other copy is left to send it.
func (w *world) lastHope(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sends[id] == 0 && w.copies[id] == 1
}

// settled counts one copy of message id acked or parked.
func (w *world) settled(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.copies[id]--
}

// sendCall is what became of the one send a delivery may make.
type sendCall struct {
	made bool
	err  error
}

// send is the mail API: it notes a send whose row is not SENDING, takes
// sendTime, fails the scenario's message the first time and counts the
// rest.
func (w *world) send(ctx context.Context, actor, id string, call *sendCall) error {
	if call.made {
		return errors.New("one send per delivery: send was already called")
	}
	call.made = true
	r, err := w.rows.Get(ctx, id)
	if err != nil {
		call.err = err
		return err
	}
	if r.Status != store.Sending {
		w.mu.Lock()
		if w.unclaimed == "" {
			w.unclaimed = fmt.Sprintf("%s sent by %s while its row was %s", id, actor, r.Status)
			w.unclaimedTask = id
		}
		w.mu.Unlock()
	}
	if err := w.st.Clock().Wait(ctx, sendTime); err != nil {
		call.err = err
		return err
	}
	w.mu.Lock()
	fail := id == w.sc.firstFail && !w.failed[id]
	w.failed[id] = w.failed[id] || fail
	if !fail {
		w.sends[id]++
	}
	n := w.sends[id]
	w.mu.Unlock()
	if fail {
		call.err = errors.New("the mail API timed out: no email went out")
		return call.err
	}
	w.st.Emit(lab.Event{Kind: lab.Mailed, Task: id, Actor: "Mail-API",
		Note: fmt.Sprintf("greeting %d for %s", n, id)})
	return nil
}

// roundTrips is the DB a delivery gets: the checker's connection, each
// statement one round trip of lesson time, and the statements remembered
// for the log.
type roundTrips struct {
	db    *sql.DB
	clock lab.Clock
	log   []string
}

func (r *roundTrips) ExecContext(ctx context.Context, query string,
	args ...any) (sql.Result, error) {
	if err := r.clock.Wait(ctx, roundTrip); err != nil {
		return nil, err
	}
	res, err := r.db.ExecContext(ctx, query, args...)
	switch {
	case err != nil:
		r.note(query, "error: "+err.Error())
	default:
		n, _ := res.RowsAffected()
		r.note(query, fmt.Sprintf("%d row(s)", n))
	}
	return res, err
}

func (r *roundTrips) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	_ = r.clock.Wait(ctx, roundTrip) // a cancelled wait leaves the query to see ctx
	r.note(query, "a row")
	return r.db.QueryRowContext(ctx, query, args...)
}

// note remembers a statement, on one line and cut at 80 characters, and
// its outcome.
func (r *roundTrips) note(query, outcome string) {
	q := []rune(strings.Join(strings.Fields(query), " "))
	if len(q) > 80 {
		q = append(q[:79], '…')
	}
	r.log = append(r.log, string(q)+" → "+outcome)
}

func (r *roundTrips) String() string {
	if len(r.log) == 0 {
		return "none"
	}
	return strings.Join(r.log, "; ")
}

// sends is n sends in words.
func sends(n int) string { return check.Count(n, "send") }

//go:build qlabex

package batchsettle

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/raffle"
	"github.com/queuelab/qlab/store"
)

// scenario is one run: users published through raffle_exchange at once,
// some of whose emails the table already holds, and a database that is
// away for the run's first downFor of lesson time.
type scenario struct {
	name    string
	users   int
	taken   []int // the users (from 1) whose email is already stored
	downFor time.Duration
}

// forever is an outage no run outlives.
const forever = time.Hour

var scenarios = []scenario{
	{name: "the lesson's: a batch of 10, u05's email already taken", users: 10, taken: []int{5}},
	{name: "the database away for 15 s, then up; u03's email taken", users: 10, taken: []int{3},
		downFor: 15 * time.Second},
	{name: "the database away for good", users: 10,
		downFor: forever},
	{name: "25 users in batches of 10, 10 and 5; u07 and u18 taken", users: 25, taken: []int{7, 18}},
}

// batchWait is the batcher's timeout (USERS_BATCH_TIMEOUT_MS).
const batchWait = time.Second

// hotLoop is how many deliveries of one user the checker lets through
// before it parks the user itself: a decision that never waits would
// spin without lesson time passing.
const hotLoop = 3 * MaxAttempts

func TestBatchSettle(t *testing.T) {
	c := check.New(t)
	for _, sc := range scenarios {
		w := newWorker(sc)
		plan := lab.Plan{}
		for i := 1; i <= sc.users; i++ {
			plan.Tasks = append(plan.Tasks, user(i))
		}
		r := check.InMem(t, check.Named{Name: sc.name, Plan: plan}, func(ctx context.Context, s *lab.Stream) error {
			return w.run(ctx, s, plan)
		})
		judge(c, r, w)
	}
}

func user(i int) string { return fmt.Sprintf("u%02d", i) }

// worker runs the student's InsertBatch as raffle_queue's batcher and
// keeps what each batch did.
type worker struct {
	sc    scenario
	table *table
	taken map[string]bool // users whose email was stored before the run

	mu         sync.Mutex
	deliveries map[string]int
	seen       []delivery // every delivery, in order
	batches    []batch
}

// delivery is one message of a batch and what was decided for it.
type delivery struct {
	task    string
	attempt int
	down    bool // the database was away for its batch
	dec     flow.Decision
}

// batch is one call of InsertBatch.
type batch struct {
	tasks []string
	calls int // insert statements it made
	down  bool
	bad   bool // it held a taken email
}

func newWorker(sc scenario) *worker {
	w := &worker{sc: sc, taken: map[string]bool{}, deliveries: map[string]int{}}
	for _, i := range sc.taken {
		w.taken[user(i)] = true
	}
	return w
}

func (w *worker) run(ctx context.Context, s *lab.Stream, plan lab.Plan) error {
	w.table = newTable(s.Clock(), w.sc.downFor)
	for id := range w.taken { // someone registered with the email earlier
		u := UserOf(&flow.Delivery{Task: id})
		u.ID = "earlier-" + id
		if err := w.table.mem.InsertUsers(ctx, []store.User{u}); err != nil {
			return err
		}
	}
	b := inmem.NewFlow(ctx, s, 2*len(plan.Tasks)+1)
	defer b.Close(context.Background())
	if err := b.Declare(ctx, raffle.Topology()); err != nil {
		return err
	}
	// The seed republishes a retry itself (with its x-retries; the lab's own
	// header here), so the consumer counts attempts in a header.
	consumer := flow.Consumer{Queue: Queue, Actor: "Batcher", RetryHeader: rabbit.RetryCountHeader}
	err := b.ConsumeBatch(ctx, consumer, flow.Batch{Size: BatchSize, Wait: batchWait,
		Handle: func(ctx context.Context, ds []*flow.Delivery) []flow.Decision { return w.handle(ctx, s, ds) }})
	if err != nil {
		return err
	}
	for _, id := range plan.Tasks {
		if err := b.PublishTo(ctx, "RaffleAPI", raffle.Exchange, Queue, id); err != nil {
			return err
		}
	}
	return b.Wait(ctx)
}

// handle is one batch: it reports each message's attempt, calls the
// student's InsertBatch on the table, and reports each decision.
func (w *worker) handle(ctx context.Context, s *lab.Stream, ds []*flow.Delivery) []flow.Decision {
	for _, d := range ds {
		e := d.Event("Batcher")
		e.Kind = lab.Started
		s.Emit(e)
	}
	w.table.begin()
	decs := InsertBatch(ctx, w.table, ds)
	calls, down := w.table.end()
	b := batch{calls: calls, down: down}
	out := make([]flow.Decision, len(ds))
	for i, d := range ds {
		out[i] = flow.Requeue() // what the backend does with a message given no decision
		if i < len(decs) {
			out[i] = decs[i]
		}
		w.mu.Lock()
		w.seen = append(w.seen, delivery{task: d.Task, attempt: d.Attempt, down: down, dec: out[i]})
		w.deliveries[d.Task]++
		if w.deliveries[d.Task] > hotLoop {
			out[i] = flow.Park(DLQ, fmt.Sprintf("stopped by the checker after %d deliveries: a loop that never ends", hotLoop))
		}
		b.tasks = append(b.tasks, d.Task)
		b.bad = b.bad || w.taken[d.Task]
		w.mu.Unlock()
		e := d.Event("Batcher")
		switch {
		case out[i].Action == flow.ActAck:
			e.Kind = lab.Succeeded
		case out[i].Reason != "" && (out[i].Action == flow.ActRetry || out[i].Action == flow.ActPark):
			e.Kind, e.Note = lab.Failed, out[i].Reason
		default:
			e.Kind, e.Note = lab.Failed, describe(out[i])
		}
		s.Emit(e)
	}
	w.mu.Lock()
	w.batches = append(w.batches, b)
	w.mu.Unlock()
	return out
}

// describe says what a decision does, in the log's words.
func describe(dec flow.Decision) string {
	switch dec.Action {
	case flow.ActAck:
		return "ack"
	case flow.ActRetry:
		return "retry via " + dec.To + ": " + dec.Reason
	case flow.ActPark:
		return fmt.Sprintf("park in %s: %q", dec.To, dec.Reason)
	case flow.ActRequeue:
		return "requeue (or no decision)"
	}
	return "drop: " + dec.Reason
}

// table is the users table: the store's in-memory implementation, away
// for the first downFor of lesson time, counting the statements of the
// batch being handled and remembering which users it stored.
type table struct {
	mem     *store.Memory
	clock   lab.Clock
	downFor time.Duration

	mu     sync.Mutex
	calls  int
	down   bool // the database was away at a statement of this batch
	stored map[string]bool
}

func newTable(clock lab.Clock, downFor time.Duration) *table {
	return &table{mem: store.NewMemory(), clock: clock, downFor: downFor, stored: map[string]bool{}}
}

// begin starts a batch: no statement yet; away as the clock says.
func (t *table) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls, t.down = 0, t.away()
}

// end returns the batch's statements and whether the database was away.
func (t *table) end() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls, t.down
}

func (t *table) away() bool { return t.clock.Elapsed() < t.downFor }

// statement counts one statement and reports the database's refusal.
func (t *table) statement(n int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	if t.away() {
		t.down = true
		return fmt.Errorf("insert of %d users: connection refused: %w", n, store.ErrUnavailable)
	}
	return nil
}

func (t *table) keep(users []store.User, skipped []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, u := range users {
		if !contains(skipped, i) {
			t.stored[u.ID] = true
		}
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// InsertUsers implements store.Users.
func (t *table) InsertUsers(ctx context.Context, users []store.User) error {
	if err := t.statement(len(users)); err != nil {
		return err
	}
	if err := t.mem.InsertUsers(ctx, users); err != nil {
		return err
	}
	t.keep(users, nil)
	return nil
}

// InsertUsersSkipping implements store.Users.
func (t *table) InsertUsersSkipping(ctx context.Context, users []store.User) ([]int, error) {
	if err := t.statement(len(users)); err != nil {
		return nil, err
	}
	skipped, err := t.mem.InsertUsersSkipping(ctx, users)
	if err == nil {
		t.keep(users, skipped)
	}
	return skipped, err
}

// CountUsers implements store.Users.
func (t *table) CountUsers(ctx context.Context) (int, error) { return t.mem.CountUsers(ctx) }

// judge records the checks on one run, each once, in the order a student
// reads them.
func judge(c *check.Checker, r check.Run, w *worker) {
	c.Accounted(r, lab.FateDone, lab.FateDead)
	w.mu.Lock()
	defer w.mu.Unlock()
	first := func(check string, bad func(d delivery) string) {
		for _, d := range w.seen {
			if got := bad(d); got != "" {
				c.That(r, check, false, got, wants[check], d.task)
				return
			}
		}
		c.That(r, check, true, "", "", "")
	}
	first(decisionCheck, func(d delivery) string {
		switch {
		case d.dec.Action == flow.ActAck,
			d.dec.Action == flow.ActRetry && d.dec.To == RetryQueue,
			d.dec.Action == flow.ActPark && d.dec.To == DLQ:
			return ""
		}
		return fmt.Sprintf("%s, attempt %d: %s", d.task, d.attempt, describe(d.dec))
	})
	first(storedCheck, func(d delivery) string {
		if d.dec.Action == flow.ActAck && !w.table.stored[d.task] {
			return fmt.Sprintf("%s acked at attempt %d, but the users table does not hold it: the user is lost", d.task, d.attempt)
		}
		return ""
	})
	first(downCheck, func(d delivery) string {
		if !d.down {
			return ""
		}
		want := flow.ActRetry
		if d.attempt >= MaxAttempts {
			want = flow.ActPark
		}
		if d.dec.Action != want || (want == flow.ActPark && d.dec.Reason == "") {
			return fmt.Sprintf("%s, attempt %d, the database away: %s", d.task, d.attempt, describe(d.dec))
		}
		return ""
	})
	reached := map[string]bool{} // users whose batch has met the database up
	first(takenCheck, func(d delivery) string {
		if d.down || reached[d.task] || !w.taken[d.task] {
			return ""
		}
		reached[d.task] = true
		email := UserOf(&flow.Delivery{Task: d.task}).Email
		if d.dec.Action != flow.ActPark || !strings.Contains(d.dec.Reason, email) {
			return fmt.Sprintf("%s (%s is taken), attempt %d: %s", d.task, email, d.attempt, describe(d.dec))
		}
		return ""
	})
	reached = map[string]bool{}
	first(healthyCheck, func(d delivery) string {
		if d.down || reached[d.task] || w.taken[d.task] {
			return ""
		}
		reached[d.task] = true
		if d.dec.Action != flow.ActAck {
			return fmt.Sprintf("%s, attempt %d, the database up: %s", d.task, d.attempt, describe(d.dec))
		}
		return ""
	})
	for _, b := range w.batches {
		if b.down || b.bad {
			continue
		}
		if !c.That(r, oneInsertCheck, b.calls == 1,
			fmt.Sprintf("a batch of %d (%s … %s), no taken email: %d insert statements", len(b.tasks), b.tasks[0], b.tasks[len(b.tasks)-1], b.calls),
			fmt.Sprintf("a batch of %d: 1 insert statement", len(b.tasks)), b.tasks[0]) {
			return
		}
	}
	c.That(r, oneInsertCheck, true, "", "", "")
}

// The checks, in the order a student reads them, and what each wants.
const (
	decisionCheck  = "one decision per message, in order: ack, retry or park"
	storedCheck    = "an acked user is in the users table: nothing acked that was not stored"
	downCheck      = "the database away: the whole batch retries, parked after 3 attempts"
	takenCheck     = "a taken email is parked at once, the email in the reason"
	healthyCheck   = "one bad row does not fail its batch: the others are stored and acked"
	oneInsertCheck = "a batch with no bad row is one insert statement"
)

var wants = map[string]string{
	decisionCheck: "one decision per message, in order: ack, retry via " + RetryQueue + " or park in " + DLQ,
	storedCheck:   "every acked user stored",
	downCheck:     fmt.Sprintf("retry via %s at attempts 1 to %d, park in %s with a reason at attempt %d", RetryQueue, MaxAttempts-1, DLQ, MaxAttempts),
	takenCheck:    "parked in " + DLQ + " at the first delivery the database takes, the taken email in the reason",
	healthyCheck:  "acked at the first delivery the database takes, whatever the rest of its batch",
}

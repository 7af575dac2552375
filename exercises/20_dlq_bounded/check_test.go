//go:build qlabex

package dlqbounded

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

// scenario is one run: messages in raffle_dlq (users, and bodies that are
// not users, whose ids start with "bad") and a database away for the
// run's first downFor of lesson time.
type scenario struct {
	name    string
	tasks   []string
	downFor time.Duration
}

// forever is an outage no run outlives.
const forever = time.Hour

var scenarios = []scenario{
	{name: "the lesson's (e): the database away 2 s, a user, a bad body",
		tasks: []string{"e-user", "e-bad"}, downFor: 2 * time.Second},
	{name: "the database away 15 s: users stored on their 3rd try",
		tasks: []string{"u1", "bad1", "u2", "u3"}, downFor: 15 * time.Second},
	{name: "the database away for good",
		tasks: []string{"g1", "g2", "bad2"}, downFor: forever},
}

// stepTime is what one try costs the consumer: decode, insert, the round
// trip to the database (a refused connection answers as fast).
const stepTime = 50 * time.Millisecond

// hotLoop is how many tries of one message the checker lets through
// before it parks the message itself: a loop that never ends would
// otherwise spin to the run's limit.
const hotLoop = 20

func TestDLQBounded(t *testing.T) {
	c := check.New(t)
	for _, sc := range scenarios {
		w := &worker{sc: sc, stored: map[string]bool{}}
		r := check.InMem(t, check.Named{Name: sc.name, Plan: lab.Plan{Tasks: sc.tasks}},
			func(ctx context.Context, s *lab.Stream) error { return w.run(ctx, s) })
		judge(c, r, w)
	}
}

func bad(task string) bool { return strings.Contains(task, "bad") }

// worker runs the student's Handle as raffle_dlq's consumer and keeps
// every try and decision.
type worker struct {
	sc     scenario
	mem    *store.Memory
	clock  lab.Clock
	stream *lab.Stream

	mu     sync.Mutex
	stored map[string]bool
	tries  []try // every delivery, in order
}

// try is one delivery and what became of it.
type try struct {
	task    string
	attempt int
	inserts int   // calls of insert (one is right)
	err     error // the last insert's error
	down    bool  // the database was away at it
	dec     flow.Decision
}

func (w *worker) run(ctx context.Context, s *lab.Stream) error {
	w.mem, w.clock, w.stream = store.NewMemory(), s.Clock(), s
	b := inmem.NewFlow(ctx, s, 2*len(w.sc.tasks)+1)
	defer b.Close(context.Background())
	if err := b.Declare(ctx, Topology()); err != nil {
		return err
	}
	// The fix counts its tries in a header of its own (qlab-retries: no x-
	// prefix, Q13); in memory the task's own counter plays it.
	consumer := flow.Consumer{Queue: DLQ, Actor: "DLQConsumer", RetryHeader: rabbit.RetryCountHeader, Handle: w.handle}
	if err := b.Consume(ctx, consumer); err != nil {
		return err
	}
	for _, id := range w.sc.tasks { // the way the main consumer's rejects arrive
		if err := b.PublishTo(ctx, "Consumer", raffle.DLX, DLQ, id); err != nil {
			return err
		}
	}
	return b.Wait(ctx)
}

// handle is one delivery: the student's Handle with an insert that
// reports the try in the stream.
func (w *worker) handle(ctx context.Context, d *flow.Delivery) flow.Decision {
	tr := try{task: d.Task, attempt: d.Attempt, down: w.away()}
	insert := func(ctx context.Context) error {
		tr.inserts++
		tr.err = w.stream.Attempt(d.Event("DLQConsumer"), func() error { return w.insert(ctx, d.Task) })
		return tr.err
	}
	tr.dec = Handle(ctx, d, insert)
	w.mu.Lock()
	w.tries = append(w.tries, tr)
	n := 0
	for _, t := range w.tries {
		n += btoi(t.task == d.Task)
	}
	w.mu.Unlock()
	if n >= hotLoop && tr.dec.Action != flow.ActAck && tr.dec.Action != flow.ActPark {
		return flow.Park(Parked, fmt.Sprintf("stopped by the checker after %d tries: a loop that never ends", n))
	}
	return tr.dec
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (w *worker) away() bool { return w.clock.Elapsed() < w.sc.downFor }

// insert is one try: stepTime, then the body's decode and the insert.
func (w *worker) insert(ctx context.Context, task string) error {
	if err := w.clock.Wait(ctx, stepTime); err != nil {
		return err
	}
	if bad(task) {
		return fmt.Errorf("%w: unexpected end of JSON input", ErrMalformed)
	}
	if w.away() {
		return fmt.Errorf("insert %s: connection refused: %w", task, store.ErrUnavailable)
	}
	u := store.User{ID: task, Name: "User " + task, Email: task + "@raffle.test"}
	if err := w.mem.InsertUsers(ctx, []store.User{u}); err != nil {
		return err
	}
	w.mu.Lock()
	w.stored[task] = true
	w.mu.Unlock()
	return nil
}

// describe says what a decision does, in the log's words.
func describe(dec flow.Decision) string {
	switch dec.Action {
	case flow.ActAck:
		return "acked"
	case flow.ActRetry:
		return "retry via " + dec.To
	case flow.ActPark:
		return fmt.Sprintf("parked in %s, reason %q", dec.To, dec.Reason)
	case flow.ActRequeue:
		return "requeued: straight back into " + DLQ
	}
	return fmt.Sprintf("dropped (%s): the message is gone", dec.Reason)
}

// The checks, in the order a student reads them.
const (
	storedCheck = "an acked user is in the users table"
	loopCheck   = "never requeued: a failed try waits 10 s in raffle_dlq_retry_10s"
	mendCheck   = "a body no retry can mend is parked in raffle_parked at once"
	boundCheck  = "a user is parked after exactly 3 failed tries, not before"
	reasonCheck = "every park says why: the error of its last try"
	oneTryCheck = "one insert per delivery"
)

// judge records the checks on one run, each once per plan, in order.
func judge(c *check.Checker, r check.Run, w *worker) {
	c.Accounted(r, lab.FateDone, lab.FateDead)
	w.mu.Lock()
	defer w.mu.Unlock()
	first := func(check, want string, bad func(t try) string) {
		for _, t := range w.tries {
			if got := bad(t); got != "" {
				c.That(r, check, false, got, want, t.task)
				return
			}
		}
		c.That(r, check, true, "", "", "")
	}
	first(storedCheck, "only a stored user acked", func(t try) string {
		if t.dec.Action == flow.ActAck && !w.stored[t.task] {
			return fmt.Sprintf("%s acked at try %d, but the users table does not hold it: the user is lost", t.task, t.attempt)
		}
		return ""
	})
	first(oneTryCheck, "insert called once per delivery", func(t try) string {
		if t.inserts != 1 {
			return fmt.Sprintf("%s, try %d: insert called %d times", t.task, t.attempt, t.inserts)
		}
		return ""
	})
	first(loopCheck, "retry via "+DLQWait+" (10 s), never requeued", func(t try) string {
		if t.err == nil || t.dec.Action == flow.ActPark || (t.dec.Action == flow.ActRetry && t.dec.To == DLQWait) {
			return ""
		}
		return fmt.Sprintf("%s, try %d failed (%v): %s; it was tried %d times", t.task, t.attempt, t.err, describe(t.dec), w.count(t.task))
	})
	first(mendCheck, "parked in "+Parked+" at its first try", func(t try) string {
		if !bad(t.task) || t.attempt != 1 || (t.dec.Action == flow.ActPark && t.dec.To == Parked) {
			return ""
		}
		return fmt.Sprintf("%s (%v), try 1: %s", t.task, t.err, describe(t.dec))
	})
	first(boundCheck, fmt.Sprintf("parked in %s when try %d fails, retried before", Parked, MaxTries), func(t try) string {
		if bad(t.task) || t.err == nil {
			return ""
		}
		parked := t.dec.Action == flow.ActPark
		if parked != (t.attempt >= MaxTries) {
			return fmt.Sprintf("%s, try %d failed (%v): %s", t.task, t.attempt, t.err, describe(t.dec))
		}
		return ""
	})
	first(reasonCheck, "a reason that holds the last try's error", func(t try) string {
		if t.dec.Action != flow.ActPark || t.err == nil || strings.Contains(t.dec.Reason, t.err.Error()) {
			return ""
		}
		return fmt.Sprintf("%s parked after try %d (%v), reason %q", t.task, t.attempt, t.err, t.dec.Reason)
	})
}

// count is how many tries task had; the caller holds mu.
func (w *worker) count(task string) int {
	n := 0
	for _, t := range w.tries {
		n += btoi(t.task == task)
	}
	return n
}

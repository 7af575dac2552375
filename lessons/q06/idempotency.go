// Package q06 is lesson Q06 — idempotency: where each strategy is safe,
// and where it sends an email twice or never.
//
// Notice: a handler does two things, send the email and write down that
// it did, and a failure can strike between them ("processed partially,
// failed, processed again"). Send first and the retry sends again; write
// first and the retry skips an email that was never sent. Only an effect
// that is itself idempotent (the mail server keeps a result per key) is
// safe both ways. With two consumers holding the same message, checking
// and then acting lets both send; an atomic claim (INSERT … ON CONFLICT DO
// NOTHING) lets one. Part 3 runs the claim against part 1's failure: what
// sank mark-then-send was keeping SENT after the failure, not the SQL
// statement, and undoing the write on failure saves either. The closing
// table counts emails owed against emails sent, from what the run did.
//
// Why so long: three parts (a failure between the send and the record, two
// consumers racing for one message, part 1's failure against writes that
// are undone) run eight strategies, four, two and two, each against its own
// mail server, and owed.go counts what each owed against what it sent.
package q06

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
)

// Lesson is Q06 in the registry.
var Lesson = lesson.Lesson{
	ID:    "Q06",
	Title: "Idempotency: which guard loses or doubles an email",
	Notice: "Each task owes one email, and C's failures strike between sending it and writing that " +
		"down: send-then-record sends again, mark-then-send skips an email it never sent, and the " +
		"mail server's idempotency key sends once. With two consumers holding one message, " +
		"check-then-act sends twice and an atomic claim once. Part 3 runs the claim against part " +
		"1's failure and undoes the write when the send fails: what sank mark-then-send was " +
		"keeping SENT, not its SQL.",
	InMem: runQ06,
}

// maxAttempts is each task's delivery budget; then it is dead-lettered.
const maxAttempts = 3

// dropAfter is how far into its send Consumer-1's connection drops in
// part 2, so the broker hands the unacknowledged message to Consumer-2.
const dropAfter = 30 * time.Millisecond

// step is one delivery as a strategy sees it: the task, the failure the
// plan has for this attempt (nil for none), which strikes between the
// handler's two steps, and the shared mail server and store.
type step struct {
	ctx    context.Context
	task   string
	planID string // the plan's id the task stands for: the plan's failures and work time are its
	n      int    // attempt number
	fail   error
	mail   *mailServer
	store  *store
	onWire func() // called while the email is on the wire (part 2's connection drop)
}

// outcome is what a delivery did: skipped says why it did nothing, err
// why it stopped halfway, note what it did.
type outcome struct {
	skipped, note string
	err           error
}

// halfway fails a delivery after its first step; what says which steps.
func (s step) halfway(what string) outcome {
	return outcome{err: fmt.Errorf("%w, %s", s.fail, what)}
}

// strategy is one way to write the handler.
type strategy struct {
	name   string
	handle func(s step) outcome
}

// noGuard sends on every delivery; the ack is its second step.
func noGuard(s step) outcome {
	msg := s.mail.send(s, "")
	if s.fail != nil {
		return s.halfway("after email " + msg + " was sent, before the ack")
	}
	return outcome{note: "email " + msg + " sent"}
}

// sendThenRecord is the processed-ID set used as check-then-act: check,
// send, then insert the id. A failure after the send leaves no record.
func sendThenRecord(s step) outcome {
	if s.store.has(s.task) {
		return outcome{skipped: "task id already in the processed-ID set"}
	}
	msg := s.mail.send(s, "")
	if s.fail != nil {
		return s.halfway("after email " + msg + " was sent, before its id was recorded")
	}
	s.store.record(s.task)
	return outcome{note: "email " + msg + " sent, id recorded"}
}

// markThenSend is the conditional update run first, as
// UPDATE … SET status='SENT' WHERE id=? AND status='PENDING': a failure
// after it leaves the task SENT with no email, and the retry skips it.
func markThenSend(s step) outcome {
	if !s.store.claim(s.task) {
		return outcome{skipped: "status is already SENT: the conditional update matched no row"}
	}
	if s.fail != nil {
		return s.halfway("after PENDING→SENT, before the email was sent")
	}
	return outcome{note: "status SENT, email " + s.mail.send(s, "") + " sent"}
}

// storedResult answers a repeat with the stored result, and sends with the
// task id as the mail server's idempotency key, so a send repeated after a
// failure (the result not stored yet) is answered, not sent again.
func storedResult(s step) outcome {
	if msg, ok := s.store.result(s.task); ok {
		return outcome{skipped: "returned the stored result " + msg}
	}
	msg := s.mail.send(s, s.task)
	if s.fail != nil {
		return s.halfway("after the mail server accepted " + msg + ", before the result was stored")
	}
	s.store.keep(s.task, msg)
	return outcome{note: "email " + msg + " (key " + s.task + "), result stored"}
}

// claimFirst inserts a claim atomically before sending, as
// INSERT INTO claims(id) VALUES (?) ON CONFLICT DO NOTHING does: of two
// consumers exactly one inserts the row. A failure before the send
// releases the claim (in a database the transaction rolls back), so the
// retry can claim again. A process that dies holding a claim keeps it:
// real claims carry a lease that expires.
func claimFirst(s step) outcome {
	if !s.store.claim(s.task) {
		return outcome{skipped: "the claim insert hit a conflict (ON CONFLICT DO NOTHING: 0 rows), another delivery holds it"}
	}
	if s.fail != nil {
		s.store.release(s.task)
		return s.halfway("after the claim, before the email was sent: claim released")
	}
	return outcome{note: "claimed, email " + s.mail.send(s, "") + " sent"}
}

// markThenSendUndo is markThenSend that sets the status back to PENDING
// when the send fails, as a rolled-back transaction would: the same
// statement as part 1's, the same safety as claimFirst.
func markThenSendUndo(s step) outcome {
	if !s.store.claim(s.task) {
		return outcome{skipped: "status is already SENT: the conditional update matched no row"}
	}
	if s.fail != nil {
		s.store.release(s.task)
		return s.halfway("after PENDING→SENT, before the email was sent: status set back to PENDING")
	}
	return outcome{note: "status SENT, email " + s.mail.send(s, "") + " sent"}
}

// part is one part of the run: its strategies and how many consumers race.
type part struct {
	title      string
	consumers  int
	strategies []strategy
}

// q06Parts are the lesson's two parts. Strategies are numbered 1… across
// them; task A of strategy 3 is A3.
func q06Parts() []part {
	return []part{
		{title: "one consumer; the plan's failures strike between the two steps, and the first task's channel closes before its first ack arrives", consumers: 1,
			strategies: []strategy{
				{"no guard", noGuard},
				{"processed-ID set: send, then record", sendThenRecord},
				{"conditional update: mark SENT, then send", markThenSend},
				{"stored result + the mail server's idempotency key", storedResult},
			}},
		{title: "two consumers; Consumer-1's connection drops mid-send and the broker redelivers its message to Consumer-2", consumers: 2,
			strategies: []strategy{
				{"check-then-act: check, send, record", sendThenRecord},
				{"claim-first: atomic claim, then send", claimFirst},
			}},
		{title: "one consumer again: part 1's failure against a write that is undone when the send fails", consumers: 1,
			strategies: []strategy{
				{"claim-first: atomic claim, released on failure", claimFirst},
				{"conditional update, set back to PENDING on failure", markThenSendUndo},
			}},
	}
}

// mailServer is the side effect: it sends each email it is asked to,
// counts them per task, and remembers the message id per idempotency key.
type mailServer struct {
	sys   *inmem.System
	plan  lab.Plan
	mu    sync.Mutex
	total int
	sent  map[string]int    // emails per task
	byKey map[string]string // idempotency key → message id
}

// send emails the customer of s.task and returns the message id; the
// email is on the wire for the plan's work time. Given a key it has seen,
// it sends nothing and answers with the message id it stored.
func (m *mailServer) send(s step, key string) string {
	m.mu.Lock()
	if msg, ok := m.byKey[key]; ok && key != "" {
		m.mu.Unlock()
		return msg + " (already sent: the mail server knew key " + key + ")"
	}
	m.total++
	m.sent[s.task]++
	msg := fmt.Sprintf("msg-%d", m.total)
	if key != "" {
		m.byKey[key] = msg
	}
	m.mu.Unlock()
	m.sys.Stream().Emit(lab.Event{Kind: lab.Mailed, Task: s.task, Actor: "Mail-Server", Note: "email " + msg})
	wire := m.plan.WorkTime(s.planID, s.n)
	_ = m.sys.Sleep(s.ctx, min(dropAfter, wire)) // a cancelled run only ends the wait early
	if s.onWire != nil {
		s.onWire()
	}
	_ = m.sys.Sleep(s.ctx, wire-min(dropAfter, wire))
	return msg
}

// store is the handler's database: a set of ids, each either merely
// recorded, claimed, or holding a stored result. Each method is one atomic
// statement; nothing makes two calls atomic together.
type store struct {
	mu      sync.Mutex
	ids     map[string]bool
	results map[string]string
}

func newStore() *store { return &store{ids: map[string]bool{}, results: map[string]string{}} }

func (s *store) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

func (s *store) record(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[id] = true
}

// claim inserts id unless it is there, and reports whether it did: the
// check and the insert under one lock, as one SQL statement.
func (s *store) claim(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id] {
		return false
	}
	s.ids[id] = true
	return true
}

func (s *store) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}

func (s *store) result(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.results[id]
	return r, ok
}

func (s *store) keep(id, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results[id] = msg
}

func runQ06(ctx context.Context, env *lesson.Env) error {
	var ran []*phase
	number := 0
	for i, pt := range q06Parts() {
		env.Phase(fmt.Sprintf("Part %d: %s", i+1, pt.title))
		for _, st := range pt.strategies {
			number++
			p := newPhase(ctx, env, st, number)
			env.Phase(fmt.Sprintf("%d · %s", number, st.name))
			var err error
			if pt.consumers == 1 {
				err = p.oneConsumer(ctx)
			} else {
				err = p.twoConsumers(ctx)
			}
			ran = append(ran, p)
			if err != nil {
				return err
			}
		}
	}
	env.Report(owedTable(ran, env.Stream.Tasks()))
	return nil
}

// phase is one strategy's run on a System of its own, with its own mail
// server and store, so the strategies never see each other's records.
type phase struct {
	sys      *inmem.System
	plan     lab.Plan
	strategy strategy
	suffix   string
	tasks    []string          // the tasks it created, in order
	planID   map[string]string // task → the plan's id it stands for
	mail     *mailServer
	store    *store
	dlq      *inmem.Queue

	mu          sync.Mutex
	redelivered map[*inmem.Task]bool // the next attempt is a redelivery, not a retry
	ackLost     string               // the task whose channel closes before its first ack arrives (parts 1 and 3)
	dropped     bool                 // Consumer-1's connection dropped (part 2)
}

func newPhase(ctx context.Context, env *lesson.Env, st strategy, number int) *phase {
	sys := inmem.New(ctx, env.Stream, env.Plan)
	return &phase{
		sys: sys, plan: env.Plan, strategy: st, suffix: fmt.Sprint(number),
		planID:      map[string]string{},
		mail:        &mailServer{sys: sys, plan: env.Plan, sent: map[string]int{}, byKey: map[string]string{}},
		store:       newStore(),
		dlq:         sys.HoldingQueue("dlq", len(env.Plan.Tasks)+1),
		redelivered: map[*inmem.Task]bool{},
	}
}

// enqueue creates the task standing for the plan's id on q.
func (p *phase) enqueue(q *inmem.Queue, id string) *inmem.Task {
	task := id + p.suffix
	p.tasks = append(p.tasks, task)
	p.planID[task] = id
	return q.Enqueue("Producer", task)
}

// oneConsumer is parts 1 and 3: every task of the plan through one
// worker, and the first task's channel closes after a complete delivery,
// before its ack reaches the broker. An ack is never lost on its own: the
// broker requeues an unacked message only when its channel or connection
// closes (or the consumer timeout closes the channel).
func (p *phase) oneConsumer(ctx context.Context) error {
	queue := p.sys.Queue("queue", len(p.plan.Tasks)+1)
	for _, id := range p.plan.Tasks {
		p.enqueue(queue, id)
	}
	if len(p.tasks) > 0 {
		p.ackLost = p.tasks[0]
	}
	p.sys.Worker("Worker", queue, func(t *inmem.Task) { p.deliver(ctx, "Worker", queue, t, nil) })
	return p.sys.Wait(ctx)
}

// twoConsumers is part 2: the plan's first task, and two consumers. The
// broker pushes each delivery to one consumer, so each consumer's share
// is a channel of its own: which consumer gets which delivery is the
// broker's decision, not the Go scheduler's. Consumer-1's connection drops
// dropAfter into its send; the broker, which never got an ack, redelivers
// the message to Consumer-2 while Consumer-1 is still between its check
// and its record. The 30 ms stagger makes the race the same on every run.
func (p *phase) twoConsumers(ctx context.Context) error {
	if len(p.plan.Tasks) == 0 {
		return nil
	}
	first := p.sys.Queue("queue→Consumer-1", 2)
	second := p.sys.Queue("queue→Consumer-2", 2)
	p.enqueue(first, p.plan.Tasks[0])
	dropConnection := func(t *inmem.Task) func() {
		return func() {
			again := &inmem.Task{ID: t.ID, Attempt: t.Attempt} // the broker's copy of the unacked message
			p.markRedelivered(again)
			second.Redeliver("Broker", again, "Consumer-1's connection dropped before its ack")
		}
	}
	p.sys.Worker("Consumer-1", first, func(t *inmem.Task) {
		var onWire func()
		if !p.dropped {
			onWire = dropConnection(t)
		}
		p.deliver(ctx, "Consumer-1", first, t, onWire)
	})
	p.sys.Worker("Consumer-2", second, func(t *inmem.Task) { p.deliver(ctx, "Consumer-2", second, t, nil) })
	return p.sys.Wait(ctx)
}

// deliver is one delivery of t from q: the strategy's handler, then the
// ack, a retry at the tail of q, or the dead-letter queue once the budget
// is spent. onWire, if set, runs while the email is on the wire.
func (p *phase) deliver(ctx context.Context, actor string, q *inmem.Queue, t *inmem.Task, onWire func()) {
	p.begin(actor, q, t)
	s := step{ctx: ctx, task: t.ID, planID: p.planID[t.ID], n: t.Attempt, mail: p.mail, store: p.store}
	s.fail = p.plan.Fails(s.planID, t.Attempt)
	if onWire != nil {
		s.onWire = func() { p.dropped = true; onWire() }
	}
	out := p.strategy.handle(s)
	switch {
	case out.skipped != "":
		p.sys.Skip(actor, q, t, out.skipped)
	case out.err != nil:
		p.failed(actor, q, t, out.err, onWire != nil && p.dropped)
	case onWire != nil && p.dropped:
		p.sys.Succeed(actor, q, t, out.note+"; its ack reaches no one, the connection is gone")
	default:
		p.sys.Succeed(actor, q, t, out.note)
		if t.ID == p.ackLost {
			p.ackLost = ""
			p.markRedelivered(t)
			q.Redeliver("Broker", t, "the worker's channel closed before its ack reached the broker, so the broker requeued it and delivers it again")
		}
	}
}

// failed ends a delivery that stopped halfway: retry it, park it, or, when
// the consumer's connection is gone, nothing (its nack reaches no one; the
// broker has already redelivered the message).
func (p *phase) failed(actor string, q *inmem.Queue, t *inmem.Task, err error, disconnected bool) {
	p.sys.Stream().Emit(lab.Event{Kind: lab.Failed, Task: t.ID, Queue: q.Name(), Actor: actor, Attempt: t.Attempt, Note: err.Error()})
	switch {
	case disconnected:
	case t.Attempt < maxAttempts:
		q.Requeue(actor, t)
	default:
		q.DeadLetter(actor, t, p.dlq, fmt.Sprintf("failed %d attempts", t.Attempt))
	}
}

// begin counts an attempt and says whether it is a redelivery: the
// broker handing out a message again, not the worker retrying a failure.
func (p *phase) begin(actor string, q *inmem.Queue, t *inmem.Task) {
	t.Attempt++
	e := lab.Event{Kind: lab.Started, Task: t.ID, Queue: q.Name(), Actor: actor, Attempt: t.Attempt}
	p.mu.Lock()
	if p.redelivered[t] {
		delete(p.redelivered, t)
		e.Note = "a redelivery, not a retry"
	}
	p.mu.Unlock()
	p.sys.Stream().Emit(e)
}

func (p *phase) markRedelivered(t *inmem.Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redelivered[t] = true
}

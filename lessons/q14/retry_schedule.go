// Package q14 is lesson Q14 — one retry queue, a schedule of delays.
//
// Notice: the notification service (seed 002) retries through ONE queue,
// email-retry-queue, putting each job's delay on the message (expiration:
// 30 s, 1 min, 2 min, 5 min). RabbitMQ expires a message only at the head
// of a queue, so when A sits out its 5-minute wait at the head, B's and
// C's 30-second retries queue behind it and come back only when A does.
// Run 1 measures how late each retry is; run 2 gives every delay level a
// wait queue of its own (one TTL per queue, so the head is always the
// first due) and every retry is on time; run 3 makes the one retry queue a
// quorum queue, which on RabbitMQ 3.10.8 and 4.3.6 alike holds the short
// retries back just the same (versions.QuorumTTLHead). In memory the
// retry queue is a FIFO that expires only its head (the same trap),
// against plain timers for the levels.
//
// The seed's delays are the lesson's own, in lesson time (30 s is 30 s on
// the log's stamps and in the tables); the lesson runs fast through its
// speed instead (WatchSpeed: 100×, a 30 s retry in 0.3 s of real time).
// Its arithmetic is kept too: retries++ runs before getRetryDelay, so the
// first retry waits 30 s, not 10 s, and MAX_RETRIES = 5 gives four retries.
package q14

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

var Lesson = lesson.Lesson{
	ID:    "Q14",
	Title: "One retry queue, a schedule of delays (head-of-line blocking)",
	Notice: "The notification service retries through one queue, email-retry-queue, with each job's delay on the message (30 s, 1 min, 2 min, 5 min: the seed's own, in lesson time, run at 100× by default). " +
		"RabbitMQ expires a message only at the head of its queue: while A sits out its 5-minute wait at the head, B's and C's 30-second retries wait behind it, and the table shows how late. " +
		"One wait queue per delay level puts every retry back on time. A quorum retry queue: RabbitMQ's TTL guide says quorum queues expire messages without waiting for the head, " +
		"but measured on 3.10.8 and on 4.3.6 it holds the short retries back just the same (270 s late on both): the docs and the brokers disagree. " +
		"The seed's own arithmetic: retries++ runs before getRetryDelay, so the first retry waits 30 s (10 s is never used), and MAX_RETRIES = 5 gives four retries where the text says three.",
	Notices: map[lab.Backend]string{lab.InMem: "The same schedule in memory: run 1's retry queue is a FIFO that expires only its head, as RabbitMQ's does, " +
		"so B's and C's 30-second retries wait behind A's 5-minute one; run 2 gives each delay level its own wait queue, here a time.AfterFunc timer per retry, and every retry is on time; " +
		"run 3 stands for the broker's quorum retry queue, which memory has no type for: the same FIFO, as 3.10.8 and 4.3.6 measured it (the TTL guide says otherwise). " +
		"The seed's arithmetic: retries++ before getRetryDelay, so the first retry waits 30 s and MAX_RETRIES = 5 gives four retries. qlab run 14 runs it on the broker."},
	InMem:   runQ14,
	Rabbit:  runQ14,
	Default: lab.Rabbit,
	// The seed's minutes run fast: each run's 9½ minutes of lesson time
	// take about 6 s in qlab run and the TUI (a 30 s retry is 0.3 s).
	WatchSpeed: 100,
	Length:     28 * time.Minute,
	// The broker tests: the 30 s first retry (the shortest TTL) takes
	// 75 ms of real time, far above rabbit.MinRealTTL, and the 1 s email
	// attempt 2.5 ms, so the order of the returns holds on a busy machine;
	// A's whole schedule takes about 1.3 s.
	TestSpeed: 400,
	// qlab compare: as the broker tests, the whole lesson in about 4 s
	// (compare interrupts it at 200 s of lesson time).
	CompareSpeed: 400,
	Topologies:   topologies,
	Faults:       true, // in the fault suite (lessons/faults)
}

// topologies is what the three runs declare, for qlab broker clean.
func topologies() []flow.Topology {
	var out []flow.Topology
	for _, st := range strategies() {
		out = append(out, st.topo)
	}
	return out
}

// Worker is the notification service's email worker (one, prefetch 1).
const Worker = "Email-Worker"

// job is one task of the load: how many of its attempts fail, and when it
// arrives: at the start, or when A begins the wait after its retry number
// arrivesAt (the load keys off A so the order is the same on every run).
type job struct {
	id        string
	failures  int
	arrivesAt int // 0: at the start; n: when A is sent round with retries = n
}

// The load. A fails every time and walks the whole schedule to the DLQ;
// E arrives as A starts its 2-minute wait, B and C as A starts its
// 5-minute one; D succeeds at once.
var load = []job{
	{"A", notify.MaxRetries, 0},
	{"D", 0, 0},
	{"E", 1, 3},
	{"B", 1, 4},
	{"C", 2, 4},
}

// strategy is one run of the lesson: the retry route it takes.
type strategy struct {
	prefix string // of its task ids
	title  string
	table  string // its rows' name in the comparison table
	topo   flow.Topology
	levels bool // a wait queue per delay level; otherwise the one retry queue
}

// via is the queue a retry with delay goes through.
func (st strategy) via(delay time.Duration) string {
	if st.levels {
		return levelQueue(delay)
	}
	return notify.RetryQueue
}

// retry sends a failed job round: into its level's wait queue, whose TTL
// is the delay, or into the one retry queue with the delay on the message
// (the seed's publishToRetryQueue(job, delay)).
func (st strategy) retry(delay time.Duration, err error) flow.Decision {
	if st.levels {
		return flow.Retry(levelQueue(delay), err)
	}
	return flow.RetryAfter(notify.RetryQueue, delay, err)
}

// The lesson's three runs.
func strategies() []strategy {
	quorum := notify.Topology(0)
	for i := range quorum.Queues {
		if quorum.Queues[i].Name == notify.RetryQueue {
			quorum.Queues[i].Quorum = true
		}
	}
	return []strategy{
		{prefix: "", title: "Run 1 (A–E): one retry queue, the delay on each message (the seed's way)",
			table: "one retry queue (classic)", topo: notify.Topology(0)},
		{prefix: "l", title: "Run 2 (lA–lE): one wait queue per delay level, a TTL on each queue",
			table: "a wait queue per level", topo: levelTopology(), levels: true},
		{prefix: "q", title: "Run 3 (qA–qE): one retry queue, declared as a quorum queue",
			table: "one retry queue (quorum)", topo: quorum},
	}
}

// levelQueue is the wait queue of one delay level, named by its delay:
// email-retry-queue.30s.
func levelQueue(delay time.Duration) string {
	return fmt.Sprintf("%s.%ds", notify.RetryQueue, int(delay.Seconds()))
}

// levelTopology is the seed's topology with its retry queue replaced by
// one wait queue per delay the schedule uses, each with that delay as its
// x-message-ttl, dead-lettering back to email-queue.
func levelTopology() flow.Topology {
	top := notify.Topology(0)
	var qs []flow.Queue
	for _, q := range top.Queues {
		if q.Name != notify.RetryQueue {
			qs = append(qs, q)
		}
	}
	for _, d := range notify.Waits() {
		qs = append(qs, flow.Queue{Name: levelQueue(d), Role: flow.Wait, TTL: d, DeadLetterTo: notify.EmailQueue})
	}
	top.Queues = qs
	return top
}

func runQ14(ctx context.Context, env *lesson.Env) error {
	var rows []retryRow
	var on flow.Facts
	for _, st := range strategies() {
		env.Phase(st.title)
		r, facts, err := runStrategy(ctx, env, st)
		rows, on = append(rows, r...), facts
		if err != nil {
			return err
		}
	}
	report(env, rows, on)
	return nil
}

// runStrategy runs the load through one retry route on a fresh backend
// and returns each retry as measured, and what it ran on.
func runStrategy(ctx context.Context, env *lesson.Env, st strategy) ([]retryRow, flow.Facts, error) {
	b, err := env.Open(ctx)
	if err != nil {
		return nil, flow.Facts{}, err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, st.topo); err != nil {
		return nil, flow.Facts{}, err
	}
	w := &worker{env: env, b: b, st: st, clock: env.Stream.Clock(), failures: map[string]int{}, arrived: map[int]bool{}, pending: map[string]retryRow{}}
	if err := b.Consume(ctx, flow.Consumer{Queue: notify.EmailQueue, Actor: Worker, RetryHeader: rabbit.RetryCountHeader, Handle: w.handle}); err != nil {
		return nil, flow.Facts{}, err
	}
	defer env.InterruptOn(b)()
	if err := w.arrive(ctx, 0); err != nil {
		return nil, flow.Facts{}, err
	}
	if err := b.Wait(ctx); err != nil {
		return w.measured(), flow.Facts{}, err
	}
	return w.measured(), flow.FactsOf(b), w.publishErr()
}

// worker is the seed's processMessage on one strategy, plus the lesson's
// stopwatch: when each retry was sent round and when it came back.
type worker struct {
	env   *lesson.Env
	b     flow.Backend
	st    strategy
	clock lab.Clock

	mu       sync.Mutex
	failures map[string]int      // task → how many of its attempts fail
	arrived  map[int]bool        // which arrivals (job.arrivesAt) were published
	pending  map[string]retryRow // task → its retry in the air
	done     []retryRow
	err      error // the first publish that failed
}

// handle is the seed's processMessage: send the email; on failure
// retries++, then the DLQ at MAX_RETRIES or the retry route with
// getRetryDelay(retries) on the way.
func (w *worker) handle(ctx context.Context, d *flow.Delivery) flow.Decision {
	w.back(d)
	err := w.env.Stream.Attempt(d.Event(Worker), func() error { return w.send(ctx, d) })
	if err == nil {
		return flow.Ack()
	}
	retries, delay, dead := notify.Decide(d.Attempt - 1) // the body's retries travel as the attempt count
	if dead {
		return flow.Park(notify.DLQ, fmt.Sprintf("retries %d >= MAX_RETRIES %d: status failed", retries, notify.MaxRetries))
	}
	w.sentRound(d.Task, retries, delay)
	if w.st.prefix+"A" == d.Task {
		if err := w.arrive(ctx, retries); err != nil {
			w.fail(err)
		}
	}
	return w.st.retry(delay, err)
}

// sendTime is how long one attempt at the email takes (lesson time, an
// SMTP round trip): jobs that fail together are sent round one after
// another, as one worker with prefetch 1 does, never at the same instant.
const sendTime = time.Second

// send is the email: it takes sendTime and fails as often as the load
// says.
func (w *worker) send(ctx context.Context, d *flow.Delivery) error {
	if err := w.clock.Wait(ctx, sendTime); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if d.Attempt <= w.failures[d.Task] {
		return fmt.Errorf("SMTP timeout (attempt %d)", d.Attempt)
	}
	return nil
}

// arrive publishes the jobs of the load that arrive at stage (once, even
// if A's delivery is handed out again after an interrupt).
func (w *worker) arrive(ctx context.Context, stage int) error {
	w.mu.Lock()
	if w.arrived[stage] {
		w.mu.Unlock()
		return nil
	}
	w.arrived[stage] = true
	var due []job
	for _, j := range load {
		if j.arrivesAt == stage {
			due = append(due, j)
			w.failures[w.st.prefix+j.id] = j.failures
		}
	}
	w.mu.Unlock()
	for _, j := range due {
		if err := w.b.Publish(ctx, "API", notify.EmailQueue, w.st.prefix+j.id); err != nil {
			return err
		}
	}
	return nil
}

// sentRound starts the stopwatch of task's retry.
func (w *worker) sentRound(task string, retries int, delay time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[task] = retryRow{strategy: w.st.table, task: task, retries: retries,
		delay: delay, via: w.st.via(delay), sentAt: w.clock.Elapsed()}
}

// back stops the stopwatch of d's retry, if one was in the air.
func (w *worker) back(d *flow.Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.pending[d.Task]
	if !ok {
		return
	}
	delete(w.pending, d.Task)
	r.waited = w.clock.Elapsed() - r.sentAt
	w.done = append(w.done, r)
}

func (w *worker) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

func (w *worker) publishErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// measured is every retry that came back, in the order it did.
func (w *worker) measured() []retryRow {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]retryRow(nil), w.done...)
}

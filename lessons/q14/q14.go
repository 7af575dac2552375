// Package q14 is lesson Q14 — one retry queue, a schedule of delays.
//
// Notice: the notification service (seed 002) puts each retry's delay on
// the message and sends it round one queue; RabbitMQ expires a message
// only at the head of a queue, so short retries wait behind a long one.
// A wait queue per delay level puts them back on time; a quorum retry
// queue does not (versions.QuorumTTLHead).
//
// The seed's numbers, kept in lesson time (30 s is 30 s on the stamps):
// RETRY_DELAYS 10 s, 30 s, 1 min, 2 min, 5 min and MAX_RETRIES 5, read
// after retries++, so a job that always fails waits 30 s, 1 min, 2 min
// and 5 min (10 s is never used) and then goes to email-dlq. The lesson
// runs fast through its speed instead (WatchSpeed: 100×, a 30 s retry in
// 0.3 s of real time). The topology is the seed's (package notify), and
// runs 2 and 3 change one queue of it: below, strategies. The mechanism
// is the seed's processMessage: worker.handle. The stopwatch that times
// each retry and the tables are in report.go.
//
// Why so long: three runs of the one schedule (a classic retry queue, a
// wait queue per level, a quorum retry queue), each timed retry by retry;
// the stopwatch and the load are in report.go and load.go, so this page is
// the topology and processMessage.
package q14

import (
	"context"
	"fmt"
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
	Notice: "The notification service retries through one queue, email-retry-queue, with each job's " +
		"delay on the message (30 s, 1 min, 2 min, 5 min): while A sits out its 5-minute wait at " +
		"the head, B's and C's 30-second retries wait behind it, and the table shows how late. " +
		"One wait queue per delay level puts every retry back on time. A quorum retry queue holds " +
		"them back just the same, measured on 3.10.8 and 4.3.6, where RabbitMQ's TTL guide says " +
		"it would not: the docs and the brokers disagree.",
	Notices: map[lab.Backend]string{lab.InMem: "The same schedule in memory: run 1's retry queue is a FIFO that expires only its head, " +
		"as RabbitMQ's does, so B's and C's 30-second retries wait behind A's 5-minute one, and " +
		"run 2's timer per retry (time.AfterFunc) is on time. Run 3 stands for the broker's " +
		"quorum retry queue with the same FIFO, as 3.10.8 and 4.3.6 measured it (the TTL guide " +
		"says otherwise). qlab run 14 runs it on the broker."},
	InMem:   runQ14,
	Rabbit:  runQ14,
	Default: lab.Rabbit,
	// The seed's minutes run fast: each run's 9½ minutes of lesson time
	// take about 6 s in qlab run and the TUI (a 30 s retry is 0.3 s).
	WatchSpeed: 100,
	Length:     28 * time.Minute,
	// The broker tests: the orders they check hold while a return is
	// less than about 90 s of lesson time late (E's 30 s level retry, due
	// back before A's 2-minute one): 0.9 s of real time at 100×. At 400×
	// (0.22 s) one return in CI came late enough to swap them. The whole
	// lesson takes about 6 s.
	TestSpeed: 100,
	// qlab compare: as the broker tests, the whole lesson in about 4 s.
	CompareSpeed: 400,
	// compare interrupts it while retries wait: E arrives at 93 s and
	// waits behind A's 2-minute retry, due back at 213 s (B and C arrive
	// after it); at 200 s both wait, however late a busy broker publishes
	// E (up to 260 ms of real time at 400×), where compare's 2 s stretched
	// to 40 s would find A alone.
	CompareInterrupt: 200 * time.Second,
	Topologies:       topologies,
	Faults:           true, // in the fault suite (lessons/faults)
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

// topologies is what the three runs declare, for qlab broker clean.
func topologies() []flow.Topology {
	var out []flow.Topology
	for _, st := range strategies() {
		out = append(out, st.topo)
	}
	return out
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
	w := &worker{env: env, b: b, st: st, clock: env.Stream.Clock()}
	if err := b.Consume(ctx, flow.Consumer{Queue: notify.EmailQueue, Actor: Worker, RetryHeader: rabbit.RetryCountHeader, Handle: w.handle}); err != nil {
		return nil, flow.Facts{}, err
	}
	defer env.InterruptOn(b)()
	if err := w.arrivals.arrive(ctx, b, st.prefix, 0); err != nil {
		return nil, flow.Facts{}, err
	}
	if err := b.Wait(ctx); err != nil {
		return w.watch.measured(), flow.Facts{}, err
	}
	return w.watch.measured(), flow.FactsOf(b), w.arrivals.err()
}

// worker is the seed's processMessage on one strategy; watch times its
// retries for the tables (report.go), arrivals publishes the load.
type worker struct {
	env      *lesson.Env
	b        flow.Backend
	st       strategy
	clock    lab.Clock
	watch    stopwatch
	arrivals arrivals
}

// handle is the seed's processMessage: send the email; on failure
// retries++, then the DLQ at MAX_RETRIES or the retry route with
// getRetryDelay(retries) on the way.
func (w *worker) handle(ctx context.Context, d *flow.Delivery) flow.Decision {
	w.watch.back(d.Task, w.clock.Elapsed())
	err := w.env.Stream.Attempt(d.Event(Worker), func() error { return w.send(ctx, d) })
	if err == nil {
		return flow.Ack()
	}
	retries, delay, dead := notify.Decide(d.Attempt - 1) // the body's retries travel as the attempt count
	if dead {
		return flow.Park(notify.DLQ, fmt.Sprintf("retries %d >= MAX_RETRIES %d: status failed", retries, notify.MaxRetries))
	}
	w.watch.sentRound(retryRow{strategy: w.st.table, task: d.Task, retries: retries,
		delay: delay, via: w.st.via(delay), sentAt: w.clock.Elapsed()})
	if w.st.prefix+"A" == d.Task { // the load keys off A: the next jobs arrive
		_ = w.arrivals.arrive(ctx, w.b, w.st.prefix, retries) // a failure is kept for runStrategy (arrivals.err)
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
	if d.Attempt <= w.arrivals.failures(d.Task) {
		return fmt.Errorf("SMTP timeout (attempt %d)", d.Attempt)
	}
	return nil
}

// Package q13 is lesson Q13 — one wait-queue loop, counted by x-death, then by
// a header of your own, and the NestJS email service's two traps.
//
// Notice: run 1 (A–D) only rejects; the broker loops the mail through
// email_queue_wait and x-death counts the attempts, up to the DLQ at 15.
// Run 2 (rA–rD) republishes with its own qlab-retries header: no "x-"
// prefix, because RabbitMQ owns x- headers and 4.0 no longer reads an
// x-death a client republishes. Run 3 (nA–nD) is the service's nack(msg):
// amqplib requeues by default, so C loops hot at attempt 1 and never sees
// the wait queue or the DLQ; the lab's guard drops it after 20
// deliveries. On the broker the lesson ends by publishing to the
// email_queue_dlq nobody declared: confirmed, and gone.
//
// Why so long: three loops (x-death, the lab's own header, amqplib's
// requeueing nack) run on the same topology, and the lesson reads every
// counter on every delivery to show where they part; traps.go adds the
// undeclared DLQ and the hot loop, report.go the tables.
package q13

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/email"
)

// The NestJS email service's numbers, in lesson time, and the lab's guard.
const (
	q13MaxAttempts = 15              // the service's maxRetries: the attempt after which a mail goes to the DLQ
	q13Wait        = 5 * time.Second // email_queue_wait's x-message-ttl
	// q13HotLoopGuard stops run 3's requeue loop (not the service's: it has
	// none). 20 is the delivery-limit RabbitMQ 4.0 gives quorum queues by
	// default (versions.DeliveryLimit measured it on 4.3.6: the 21st
	// delivery's reject dropped the message); classic queues, like this
	// one, have no limit on either version.
	q13HotLoopGuard = 20
)

var Lesson = lesson.Lesson{
	ID:         "Q13",
	WatchSpeed: 5, // a watchable pace in the TUI
	Length:     146 * time.Second,
	Title:      "One wait-queue loop: x-death counting vs your own retry header",
	Notice: fmt.Sprintf("Run 1 (A–D) is the NestJS email service's loop: the worker only rejects, the broker "+
		"parks the mail %s in email_queue_wait, and at attempt %d by x-death the worker parks C "+
		"in the DLQ. Run 2 (rA–rD) counts in a header of its own, %s, not in an x- one like the "+
		"RaffleAPI's x-retries: x- names are RabbitMQ's. Run 3 (nA–nD) is the service's "+
		"nack(msg): amqplib requeues by default, so C loops at attempt 1 until the lab's guard "+
		"drops it after %d deliveries.", q13Wait, q13MaxAttempts, rabbit.RetryCountHeader, q13HotLoopGuard),
	InMem:      runQ13,
	Rabbit:     runQ13,
	Faults:     true, // in the fault suite (lessons/faults)
	Topologies: func() []flow.Topology { return []flow.Topology{email.Loop(q13Wait)} },
	TestSpeed:  200, // the 5 s wait takes 25 ms
}

// q13Loop is one run of the loop: how it counts, who works, which ids.
type q13Loop struct {
	prefix  string // task ids are prefix + the plan's ids
	actor   string
	counter string // what the attempt number is read from, for notes and tables
	header  string // the retry header the worker counts in; "" lets the broker count (x-death)
	requeue bool   // a failure is amqplib's nack(msg): requeued at once, not retried
	title   string
}

// The lesson's three runs, in order.
var q13Loops = []q13Loop{
	{prefix: "", actor: "XDeath-Worker", counter: "x-death", title: "Run 1 (A–D): the worker rejects, x-death counts"},
	{prefix: "r", actor: "Retries-Worker", counter: rabbit.RetryCountHeader, header: rabbit.RetryCountHeader,
		title: "Run 2 (rA–rD): the worker republishes with its own " + rabbit.RetryCountHeader + " header"},
	{prefix: "n", actor: "Nack-Worker", counter: "x-death", requeue: true,
		title: "Run 3 (nA–nD): the service's nack(msg), which amqplib turns into a requeue"},
}

// planID is the plan's id of task id: the plan decides which attempts of
// rC fail exactly as it does for C.
func (l q13Loop) planID(id string) string { return strings.TrimPrefix(id, l.prefix) }

// q13Parked is one mail found in the DLQ at the end of a run.
type q13Parked struct {
	task   string
	counts string // what its counters said when it was parked
	reason string // its last error
}

// runQ13 runs the three loops, each on a fresh backend, then shows what
// each left in the DLQ, what the counters read on the broker, and what
// the service's two traps did.
func runQ13(ctx context.Context, env *lesson.Env) error {
	var parked []q13Parked
	var readings q13Readings
	var broker flow.Facts
	for _, loop := range q13Loops {
		env.Phase(loop.title)
		p, on, err := q13Run(ctx, env, loop, &readings)
		parked, broker = append(parked, p...), on
		if err != nil {
			return err
		}
	}
	if !broker.Broker {
		env.Report(q13ParkedTable(parked, "attempt field", "In memory the task's own attempt field plays every counter."))
		env.Report(q13TrapTable(broker, env.Plan.Poison, &readings, nil))
		return nil
	}
	env.Report(q13ParkedTable(parked, "x-death rejects / expiries, "+rabbit.RetryCountHeader,
		"Read back with basic.get and left in place: the headers travelled with the message."))
	if len(env.Plan.Poison) > 0 {
		env.Report(q13CounterTable(broker.Version, env.Plan.Poison[0], &readings))
	}
	undeclared, err := q13Unroutable(ctx, env)
	if err != nil {
		return err
	}
	env.Report(q13TrapTable(broker, env.Plan.Poison, &readings, undeclared))
	return nil
}

// q13Run runs one loop: a worker on email_queue, the plan's tasks
// published to it, until every task is done or parked. A failed attempt
// retries through email_queue_wait (q13Wait), or in run 3 is requeued
// (q13Nack); attempt q13MaxAttempts parks the mail (the shared
// flow.Retries policy). It returns what the DLQ holds and whether, and on
// which version, the run was on a broker.
func q13Run(ctx context.Context, env *lesson.Env, loop q13Loop, readings *q13Readings) ([]q13Parked, flow.Facts, error) {
	var broker flow.Facts
	b, err := env.Open(ctx)
	if err != nil {
		return nil, broker, err
	}
	defer env.Close(ctx, b)
	broker = flow.FactsOf(b)
	if err := env.Declare(ctx, b, email.Loop(q13Wait)); err != nil {
		return nil, broker, err
	}
	policy := flow.Retries{Via: email.WaitQueue, DLQ: email.DLQ, Max: q13MaxAttempts,
		GaveUp: func(attempt int) string { return fmt.Sprintf("%s (counted by %s)", q13GaveUp(attempt), loop.counter) }}
	lastErr := map[string]string{} // only the worker writes it, until Wait returns
	handle := func(ctx context.Context, d *flow.Delivery) flow.Decision {
		if broker.Broker { // the broker's headers carry its counters
			readings.add(d.Task, readCounters(d.Headers))
		}
		err := env.Stream.Attempt(d.Event(loop.actor), func() error { return env.Work(ctx, loop.planID(d.Task), d.Attempt) })
		if err == nil {
			return flow.Ack()
		}
		lastErr[d.Task] = err.Error()
		if loop.requeue {
			return q13Nack(readings, d)
		}
		return policy.Decide(d, err)
	}
	if err := b.Consume(ctx, flow.Consumer{Queue: email.Queue, Actor: loop.actor, RetryHeader: loop.header, Handle: handle}); err != nil {
		return nil, broker, err
	}
	defer env.InterruptOn(b)()
	for _, id := range env.Plan.Tasks {
		if err := b.Publish(ctx, "Producer", email.Queue, loop.prefix+id); err != nil {
			return nil, broker, err
		}
	}
	if err := b.Wait(ctx); err != nil {
		return nil, broker, err
	}
	in, ok := b.(flow.Inspector)
	if !ok {
		return nil, broker, nil // nothing can read the DLQ back: its table stays empty
	}
	dlq, err := in.Peek(ctx, email.DLQ, 2*len(env.Plan.Tasks))
	return q13ParkedIn(dlq, lastErr, broker.Broker), broker, err
}

// q13GaveUp is the note of a mail parked after its last attempt.
func q13GaveUp(attempt int) string {
	return fmt.Sprintf("attempt %d of %d failed: published to the DLQ by the worker, then acked", attempt, q13MaxAttempts)
}

// q13Reading is what one delivery's counters said.
type q13Reading struct {
	first   int64 // x-death[0].count, 1 without x-death: the service's reading
	rejects int64 // x-death: times rejected (in email_queue)
	expired int64 // x-death: times expired (in email_queue_wait)
	retries int   // qlab-retries
}

// readCounters reads every counter a delivery's headers carry.
func readCounters(headers map[string]any) q13Reading {
	deaths := rabbit.ReadDeaths(headers)
	retries, _ := rabbit.ReadRetries(headers, rabbit.RetryCountHeader) // a handler only sees counts the flow validated
	r := q13Reading{first: 1, rejects: deaths.Reason("rejected"), expired: deaths.Reason("expired"), retries: retries}
	if len(deaths) > 0 {
		r.first = deaths[0].Count // the broker keeps the latest death first
	}
	return r
}

// q13Readings records, per task, what every delivery's counters said.
// Consumers write from their goroutines, the run reads at the end.
type q13Readings struct {
	mu    sync.Mutex
	by    map[string][]q13Reading
	nacks map[string][]int // run 3: the attempt of each requeued delivery, per task
}

// nacked records a run-3 delivery of task at attempt and returns how many
// that task has had.
func (r *q13Readings) nacked(task string, attempt int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nacks == nil {
		r.nacks = map[string][]int{}
	}
	r.nacks[task] = append(r.nacks[task], attempt)
	return len(r.nacks[task])
}

func (r *q13Readings) nackAttempts(task string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.nacks[task]...)
}

// nackedTasks are the tasks run 3 requeued, sorted.
func (r *q13Readings) nackedTasks() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.nacks))
}

func (r *q13Readings) add(task string, x q13Reading) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string][]q13Reading{}
	}
	r.by[task] = append(r.by[task], x)
}

func (r *q13Readings) of(task string) []q13Reading {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]q13Reading(nil), r.by[task]...)
}

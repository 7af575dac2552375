package lessons

// Q13 — one wait-queue loop, counted by x-death, then by a header of your own.
//
// Notice: run 1 (A–D) only rejects; the broker loops the mail through
// email_queue_wait and x-death counts the attempts, up to the DLQ at 15.
// Run 2 (rA–rD) republishes with its own x-retries, because a republished
// x-death is counted (or not) as the broker version pleases.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// Seed 000's numbers, in lesson time.
const (
	q13MaxAttempts = 15              // the seed's maxRetries: the attempt after which a mail goes to the DLQ
	q13Wait        = 5 * time.Second // email_queue_wait's x-message-ttl
)

var q13 = Lesson{
	ID:    "Q13",
	Title: "One wait-queue loop: x-death counting vs your own retry header",
	Notice: fmt.Sprintf("Run 1 (A–D) is seed 000's loop: the worker only rejects, the broker parks the mail %s in email_queue_wait and sends it back, "+
		"and x-death tells the worker the attempt; at attempt %d it publishes C to email_queue_dlq itself and acks. "+
		"Run 2 (rA–rD) republishes failures with its own x-retries / x-retry-reason headers: once a worker republishes, what x-death counts depends on the broker version. "+
		"In memory, the task's attempt field plays both parts.", q13Wait, q13MaxAttempts),
	InMem:  runQ13,
	Rabbit: runQ13Rabbit,
}

// q13Loop is one run of the loop: how it counts, who works, which ids.
type q13Loop struct {
	prefix  string // task ids are prefix + the plan's ids
	actor   string
	counter string // what the attempt number is read from, for notes and tables
	header  bool   // count with x-retries (and republish) instead of x-death (and reject)
}

// The lesson's two runs, in order.
var q13Loops = []q13Loop{
	{prefix: "", actor: "XDeath-Worker", counter: "x-death"},
	{prefix: "r", actor: "Retries-Worker", counter: "x-retries", header: true},
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

// runQ13 is the in-memory variant: the same loop, with the attempt number
// in the task's own field (inmem.Task.Attempt) for both runs. There is no
// broker to count for the worker, so "by x-death" and "by header" are the
// same mechanics here; the runs exist so both backends create the same
// tasks with the same fates and attempts.
func runQ13(ctx context.Context, env *Env) error {
	var parked []q13Parked
	for _, loop := range q13Loops {
		p, err := q13InMem(ctx, env, loop)
		parked = append(parked, p...)
		if err != nil {
			return err
		}
	}
	env.Report(q13ParkedTable(parked, "attempt field", "the DLQ-Worker holds what arrives"))
	return nil
}

// q13InMem runs one loop in memory: a failed attempt waits q13Wait (a
// timer standing in for email_queue_wait) and comes back; attempt
// q13MaxAttempts goes to the DLQ.
func q13InMem(ctx context.Context, env *Env, loop q13Loop) ([]q13Parked, error) {
	sys := inmem.New(ctx, env.Stream, env.Plan)
	sys.Process = func(ctx context.Context, t *inmem.Task) error {
		if err := sys.Sleep(ctx, env.Plan.Work); err != nil {
			return err
		}
		return env.Plan.Fails(loop.planID(t.ID), t.Attempt)
	}
	n := len(env.Plan.Tasks) + 1
	mainQ := sys.Queue(rabbit.EmailQueue, n)
	dlq := sys.Queue(rabbit.EmailDLQ, n)
	lastErr := map[*inmem.Task]string{} // only the loop's worker touches it
	sys.Worker(loop.actor, mainQ, func(t *inmem.Task) {
		err := sys.Attempt(loop.actor, mainQ, t)
		switch {
		case err == nil:
		case t.Attempt >= q13MaxAttempts:
			lastErr[t] = err.Error()
			mainQ.DeadLetter(loop.actor, t, dlq, q13GaveUp(t.Attempt))
		default:
			sys.Schedule(loop.actor, t, rabbit.EmailWait, mainQ, q13Wait)
		}
	})
	var parked []q13Parked // only the DLQ-Worker touches it until Wait returns
	sys.Worker("DLQ-Worker", dlq, func(t *inmem.Task) {
		parked = append(parked, q13Parked{task: t.ID, counts: fmt.Sprintf("attempt %d", t.Attempt), reason: lastErr[t]})
	})
	for _, id := range env.Plan.Tasks {
		mainQ.Enqueue("Producer", loop.prefix+id)
	}
	defer env.interruptAfter(func() { sys.Crash("process") })()
	return parked, sys.Wait(ctx)
}

// q13GaveUp is the note of a mail parked after its last attempt.
func q13GaveUp(attempt int) string {
	return fmt.Sprintf("attempt %d of %d failed: published to the DLQ by the worker, then acked", attempt, q13MaxAttempts)
}

// q13ParkedTable lists what ended up in the DLQ.
func q13ParkedTable(parked []q13Parked, counters, note string) render.Table {
	t := render.Table{
		Title:  "What the DLQ holds",
		Header: []string{"task", counters, "last error"},
		Notes:  []string{note},
	}
	for _, p := range parked {
		t.Rows = append(t.Rows, []string{p.task, p.counts, p.reason})
	}
	return t
}

// runQ13Rabbit runs both loops on the broker under the run's queue names.
func runQ13Rabbit(ctx context.Context, env *Env) error {
	s, err := rabbit.Open(ctx, env.Broker, brokerNames(env), env.Stream.Clock(), nil)
	if err != nil {
		return err
	}
	defer closeSession(ctx, env, s)
	return q13RabbitOn(ctx, env, s)
}

// q13Reading is what one delivery's counters said.
type q13Reading struct {
	first   int64 // x-death[0].count, 1 without x-death: seed 000's reading
	rejects int64 // x-death: times rejected (in email_queue)
	expired int64 // x-death: times expired in email_queue_wait
	retries int   // x-retries
}

// q13Readings records, per task, what every delivery's counters said.
// Consumers write from their goroutines, the run reads at the end.
type q13Readings struct {
	mu sync.Mutex
	by map[string][]q13Reading
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

// q13RabbitOn declares seed 000's loop on s, runs both loops one after
// the other, then reads the DLQ back with basic.get (leaving it in place)
// and reports it with what the counters said. Tests call it with a
// session of their own, to inspect the queues after the run.
func q13RabbitOn(ctx context.Context, env *Env, s *rabbit.Session) error {
	topo := rabbit.EmailLoopTopology(q13Wait)
	if err := s.Declare(ctx, topo); err != nil {
		return err
	}
	pub, err := s.Publisher(ctx)
	if err != nil {
		return err
	}
	defer pub.Close()
	var readings q13Readings
	for _, loop := range q13Loops {
		if err := q13RabbitLoop(ctx, env, s, pub, loop, &readings); err != nil {
			return err
		}
	}
	dlq, err := s.Peek(ctx, rabbit.EmailDLQ, 2*len(env.Plan.Tasks))
	if err != nil {
		return err
	}
	version, _ := s.Connection().Properties["version"].(string)
	env.Report(q13ParkedTable(q13ParkedOnBroker(s, dlq), "x-death rejects / expiries, x-retries",
		"Read back with basic.get and left in place: the headers travelled with the message."))
	if len(env.Plan.Poison) > 0 {
		env.Report(q13CounterTable(version, env.Plan.Poison[0], &readings))
	}
	return nil
}

// q13RabbitLoop runs one loop: a consumer on email_queue, the plan's
// tasks published to it, until every task is done or dead.
func q13RabbitLoop(ctx context.Context, env *Env, s *rabbit.Session, pub *rabbit.Publisher, loop q13Loop, readings *q13Readings) error {
	simulate := rabbit.Simulate(env.Plan, env.Stream.Clock())
	process := func(ctx context.Context, task string, attempt int) error {
		return simulate(ctx, loop.planID(task), attempt)
	}
	wait := s.Names.Of(rabbit.EmailWait)
	handle := func(ctx context.Context, d *rabbit.Delivery) {
		r := q13Reading{first: 1, rejects: d.Deaths.Reason("rejected"), expired: d.Deaths.Count(wait), retries: rabbit.Retries(d.Headers)}
		if len(d.Deaths) > 0 {
			r.first = d.Deaths[0].Count // the broker keeps the latest death first
		}
		readings.add(d.Task, r)
		attempt := d.Attempt() // 1 + the rejects x-death counted
		if loop.header {
			attempt = 1 + r.retries
		}
		err := rabbit.AttemptAs(ctx, env.Stream, loop.actor, d, attempt, process)
		if err == nil {
			_ = d.Ack() // a lost ack means a redelivery, which the consumer reports
			return
		}
		if attempt >= q13MaxAttempts {
			q13Park(ctx, env, s, pub, loop, d, attempt, err)
			return
		}
		q13Retry(ctx, env, s, pub, loop, d, attempt, err)
	}
	c, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: rabbit.EmailQueue, Actor: loop.actor, Prefetch: 1, Stream: env.Stream}, handle)
	if err != nil {
		return err
	}
	defer c.Stop() // the next loop brings its own worker
	defer env.interruptAfter(s.InterruptConsumers)()
	for _, id := range env.Plan.Tasks {
		env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: loop.prefix + id, Queue: rabbit.EmailQueue, Actor: "Producer"})
		if err := pub.Publish(ctx, rabbit.EmailQueue, loop.prefix+id, nil); err != nil {
			return err
		}
	}
	return s.WaitSettled(ctx, env.Stream, nil)
}

// q13Retry sends d round the wait queue once more. Counting by x-death,
// the worker rejects and the broker dead-letters it (and counts). Counting
// by header, the worker republishes a copy to the wait queue itself, with
// x-retries and x-retry-reason on top of the headers it received (x-death
// included, to show what the broker then does with it), and acks.
func q13Retry(ctx context.Context, env *Env, s *rabbit.Session, pub *rabbit.Publisher, loop q13Loop, d *rabbit.Delivery, attempt int, cause error) {
	note := "rejected: the broker dead-letters it into " + rabbit.EmailWait
	if loop.header {
		note = fmt.Sprintf("republished to %s with %s=%d, %s=%q; original acked", rabbit.EmailWait, rabbit.RetriesHeader, attempt, rabbit.RetryReasonHeader, cause.Error())
	}
	env.Stream.Emit(lab.Event{Kind: lab.Scheduled, Task: d.Task, Queue: rabbit.EmailWait, To: rabbit.EmailQueue, Actor: loop.actor,
		Attempt: attempt, DelayMs: q13Wait.Milliseconds(), Note: note})
	if !loop.header {
		_ = d.Reject()
		return
	}
	if err := pub.Republish(ctx, rabbit.EmailWait, d, rabbit.WithRetry(d.Headers, attempt, cause.Error())); err != nil {
		// Unacked, the original goes back to email_queue when this
		// consumer stops: not lost, but this retry did not happen.
		s.Logger.Warn("q13: republishing to the wait queue failed", "task", d.Task, "err", err.Error())
		return
	}
	_ = d.Ack()
}

// q13Park publishes d to the DLQ with its headers (the seed copies them;
// the header loop also records the last error) and acks the original. The
// dead_lettered event comes last, once the broker holds the copy.
func q13Park(ctx context.Context, env *Env, s *rabbit.Session, pub *rabbit.Publisher, loop q13Loop, d *rabbit.Delivery, attempt int, cause error) {
	headers := d.Headers
	if loop.header {
		headers = rabbit.WithRetry(d.Headers, rabbit.Retries(d.Headers), cause.Error())
	}
	if err := pub.Republish(ctx, rabbit.EmailDLQ, d, headers); err != nil {
		s.Logger.Warn("q13: publishing to the DLQ failed", "task", d.Task, "err", err.Error())
		return
	}
	if err := d.Ack(); err != nil {
		s.Logger.Warn("q13: ack after parking failed; the broker will redeliver", "task", d.Task, "err", err.Error())
	}
	env.Stream.Emit(lab.Event{Kind: lab.DeadLettered, Task: d.Task, Queue: rabbit.EmailQueue, To: rabbit.EmailDLQ, Actor: loop.actor,
		Attempt: attempt, Note: fmt.Sprintf("%s (counted by %s)", q13GaveUp(attempt), loop.counter)})
}

// q13ParkedOnBroker describes the messages read back from the DLQ.
func q13ParkedOnBroker(s *rabbit.Session, dlq []rabbit.Delivery) []q13Parked {
	var out []q13Parked
	for _, d := range dlq {
		counts := fmt.Sprintf("%d / %d, %d", d.Deaths.Reason("rejected"), d.Deaths.Count(s.Names.Of(rabbit.EmailWait)), rabbit.Retries(d.Headers))
		reason := rabbit.RetryReason(d.Headers)
		if reason == "" {
			reason = "(not kept: x-death records no error)"
		}
		out = append(out, q13Parked{task: d.Task, counts: counts, reason: reason})
	}
	return out
}

// q13CounterTable shows, for the poison task of each loop, what every
// counter read on each of its deliveries: the demonstration of why a
// worker that republishes keeps its own count.
func q13CounterTable(version, poison string, readings *q13Readings) render.Table {
	series := func(task string, f func(q13Reading) string) string {
		var out []string
		for _, r := range readings.of(task) {
			out = append(out, f(r))
		}
		return strings.Join(out, " ")
	}
	first := func(r q13Reading) string { return fmt.Sprint(r.first) }
	rejects := func(r q13Reading) string { return fmt.Sprint(r.rejects) }
	expired := func(r q13Reading) string { return fmt.Sprint(r.expired) }
	retries := func(r q13Reading) string { return fmt.Sprint(r.retries) }
	byHeader := q13Loops[1].prefix + poison
	return render.Table{
		Title:  fmt.Sprintf("What the counters read on each delivery of %s and %s (RabbitMQ %s)", poison, byHeader, version),
		Header: []string{"task", "counter", "per delivery"},
		Rows: [][]string{
			{poison, "x-death rejects (attempt - 1)", series(poison, rejects)},
			{poison, "x-death expiries in email_queue_wait", series(poison, expired)},
			{poison, "x-death[0].count ?? 1 (seed 000's reading)", series(poison, first)},
			{byHeader, "x-retries (attempt - 1)", series(byHeader, retries)},
			{byHeader, "x-death rejects", series(byHeader, rejects)},
			{byHeader, "x-death expiries, header copied back", series(byHeader, expired)},
		},
		Notes: q13CounterNotes(readings.of(byHeader)),
	}
}

// q13CounterNotes says what the header loop's deliveries show about the
// broker's x-death, from what was measured rather than what is expected.
func q13CounterNotes(rs []q13Reading) []string {
	if len(rs) < 3 {
		return nil
	}
	var rejects int64
	for _, r := range rs {
		rejects += r.rejects
	}
	var notes []string
	if rejects == 0 {
		notes = append(notes, "Run 2 never rejects, so x-death counts no rejects: a worker counting rejects would retry forever.")
	}
	last := rs[len(rs)-1].expired
	switch {
	case last == int64(len(rs)-1):
		notes = append(notes, "The x-death copied back into each republished message kept counting: this broker reads a client's x-death. "+
			"RabbitMQ 3.13.0-3.13.2 did not, and 4.x treats x- headers as the broker's own: do not build on it.")
	case last == 1:
		notes = append(notes, "The x-death copied back restarted at 1 every round: this broker ignores a client's x-death.")
	default:
		notes = append(notes, fmt.Sprintf("The x-death copied back ended at %d after %d rounds.", last, len(rs)-1))
	}
	return append(notes, "x-retries counted every round: the worker writes it and reads it back; the broker only carries it.")
}

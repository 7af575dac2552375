// Package q13 is lesson Q13 — one wait-queue loop, counted by x-death, then by a header of your own.
//
// Notice: run 1 (A–D) only rejects; the broker loops the mail through
// email_queue_wait and x-death counts the attempts, up to the DLQ at 15.
// Run 2 (rA–rD) republishes with its own x-retries, because a republished
// x-death is counted (or not) as the broker version pleases.
package q13

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/lessons/q12"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// Seed 000's numbers, in lesson time.
const (
	q13MaxAttempts = 15              // the seed's maxRetries: the attempt after which a mail goes to the DLQ
	q13Wait        = 5 * time.Second // email_queue_wait's x-message-ttl
)

var Lesson = lesson.Lesson{
	ID:         "Q13",
	WatchSpeed: 5, // a watchable pace in the TUI
	Title:      "One wait-queue loop: x-death counting vs your own retry header",
	Notice: fmt.Sprintf("Run 1 (A–D) is seed 000's loop: the worker only rejects, the broker parks the mail %s in email_queue_wait and sends it back, "+
		"and x-death tells the worker the attempt; at attempt %d it publishes C to email_queue_dlq itself and acks. "+
		"Run 2 (rA–rD) republishes failures with its own x-retries / x-retry-reason headers: once a worker republishes, what x-death counts depends on the broker version. "+
		"In memory, the task's attempt field plays both parts.", q13Wait, q13MaxAttempts),
	InMem:     runQ13,
	Rabbit:    runQ13,
	Faults:    true, // in the fault suite (lessons/faults)
	TestSpeed: 200,  // the 5 s wait takes 25 ms
}

// q13Loop is one run of the loop: how it counts, who works, which ids.
type q13Loop struct {
	prefix  string // task ids are prefix + the plan's ids
	actor   string
	counter string // what the attempt number is read from, for notes and tables
	header  string // the retry header the worker counts in; "" lets the broker count (x-death)
	title   string
}

// The lesson's two runs, in order.
var q13Loops = []q13Loop{
	{prefix: "", actor: "XDeath-Worker", counter: "x-death", title: "Run 1 (A–D): the worker rejects, x-death counts"},
	{prefix: "r", actor: "Retries-Worker", counter: "x-retries", header: rabbit.RetriesHeader,
		title: "Run 2 (rA–rD): the worker republishes with its own x-retries header"},
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

// runQ13 runs both loops, each on a fresh backend, then shows what each
// left in the DLQ and, on the broker, what the counters read.
func runQ13(ctx context.Context, env *lesson.Env) error {
	var parked []q13Parked
	var readings q13Readings
	version := ""
	for _, loop := range q13Loops {
		env.Phase(loop.title)
		p, v, err := q13Run(ctx, env, loop, &readings)
		parked, version = append(parked, p...), v
		if err != nil {
			return err
		}
	}
	if version == "" {
		env.Report(q13ParkedTable(parked, "attempt field", "In memory the task's own attempt field plays both counters."))
		return nil
	}
	env.Report(q13ParkedTable(parked, "x-death rejects / expiries, x-retries",
		"Read back with basic.get and left in place: the headers travelled with the message."))
	if len(env.Plan.Poison) > 0 {
		env.Report(q13CounterTable(version, env.Plan.Poison[0], &readings))
	}
	return nil
}

// q13Run runs one loop: a worker on email_queue, the plan's tasks
// published to it, until every task is done or parked. A failed attempt
// retries through email_queue_wait (q13Wait); attempt q13MaxAttempts
// parks the mail. It returns what the DLQ holds and the broker's version
// ("" in memory).
func q13Run(ctx context.Context, env *lesson.Env, loop q13Loop, readings *q13Readings) ([]q13Parked, string, error) {
	b, err := env.Open(ctx)
	if err != nil {
		return nil, "", err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, q12.EmailLoop(q13Wait)); err != nil {
		return nil, "", err
	}
	lastErr := map[string]string{} // only the worker writes it, until Wait returns
	handle := func(ctx context.Context, d *flow.Delivery) flow.Decision {
		if d.Headers != nil {
			readings.add(d.Task, readCounters(d.Headers))
		}
		err := env.Stream.Attempt(d.Event(loop.actor), func() error { return env.Work(ctx, loop.planID(d.Task), d.Attempt) })
		if err == nil {
			return flow.Ack()
		}
		lastErr[d.Task] = err.Error()
		if d.Attempt >= q13MaxAttempts {
			return flow.Park(q12.EmailDLQ, fmt.Sprintf("%s (counted by %s)", q13GaveUp(d.Attempt), loop.counter))
		}
		return flow.Retry(q12.EmailWait, err)
	}
	if err := b.Consume(ctx, flow.Consumer{Queue: q12.EmailQueue, Actor: loop.actor, RetryHeader: loop.header, Handle: handle}); err != nil {
		return nil, "", err
	}
	defer env.InterruptAfter(b.Interrupt)()
	for _, id := range env.Plan.Tasks {
		if err := b.Publish(ctx, "Producer", q12.EmailQueue, loop.prefix+id); err != nil {
			return nil, "", err
		}
	}
	if err := b.Wait(ctx); err != nil {
		return nil, "", err
	}
	dlq, err := b.Peek(ctx, q12.EmailDLQ, 2*len(env.Plan.Tasks))
	return q13ParkedIn(dlq, lastErr), lesson.BrokerVersion(b), err
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

// q13ParkedIn describes the messages read back from the DLQ: in memory
// by their attempt field and the worker's note of the last error; on the
// broker by what their headers kept.
func q13ParkedIn(dlq []flow.Delivery, lastErr map[string]string) []q13Parked {
	var out []q13Parked
	for _, d := range dlq {
		if d.Headers == nil {
			out = append(out, q13Parked{task: d.Task, counts: fmt.Sprintf("attempt %d", d.Attempt), reason: lastErr[d.Task]})
			continue
		}
		c := readCounters(d.Headers)
		reason := rabbit.RetryReason(d.Headers)
		if reason == "" {
			reason = "(not kept: x-death records no error)"
		}
		out = append(out, q13Parked{task: d.Task, counts: fmt.Sprintf("%d / %d, %d", c.rejects, c.expired, c.retries), reason: reason})
	}
	return out
}

// q13Reading is what one delivery's counters said.
type q13Reading struct {
	first   int64 // x-death[0].count, 1 without x-death: seed 000's reading
	rejects int64 // x-death: times rejected (in email_queue)
	expired int64 // x-death: times expired (in email_queue_wait)
	retries int   // x-retries
}

// readCounters reads every counter a delivery's headers carry.
func readCounters(headers map[string]any) q13Reading {
	deaths := rabbit.ReadDeaths(headers)
	r := q13Reading{first: 1, rejects: deaths.Reason("rejected"), expired: deaths.Reason("expired"), retries: rabbit.Retries(headers)}
	if len(deaths) > 0 {
		r.first = deaths[0].Count // the broker keeps the latest death first
	}
	return r
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

// Package q12 is lesson Q12 — circuit breaker.
//
// Notice: the mail service is down from 5 s to 35 s. Without a breaker
// (mails n01…) every retry from the wait queue hits the dead service: a
// retry storm. With one (mails b01…) 2 failed calls of 5 (over 20 %) open it, calls fail fast
// and go back to the wait queue, one trial call goes through every 10 s,
// and the first trial after the service is back closes it. No mail is lost.
package q12

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/breaker"
	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
)

var Lesson = lesson.Lesson{
	ID:         "Q12",
	WatchSpeed: 2, // a watchable pace in the TUI
	Title:      "Circuit breaker: fail fast while the mail service is down",
	Notice: "The mail service is down from 5 s to 35 s. Without a breaker (mails n01…) every retry hits the dead service: a retry storm. " +
		"With one (mails b01…) it opens once 2 of its 5 calls have failed (over 20 %), calls fail fast back to the wait queue, one trial call goes through every 10 s, and it closes once the service is back. No mail is lost.",
	InMem:     runQ12,
	Rabbit:    runQ12,
	Faults:    true, // in the fault suite (lessons/faults)
	TestSpeed: 100,  // the 30 s outage takes 0.3 s
	Parity: lesson.Parity{TimingSensitive: "whether a retry lands inside the outage, what the breaker's window holds, and (with a fail rate) " +
		"which mails spend their deliveries on fast fails depend on when calls happen: real time on the broker"},
}

// Seed 000's queues: one work queue, one wait queue that sends failures
// back after its TTL, and the DLQ the worker publishes to at the end.
const (
	EmailQueue = "email_queue"
	EmailWait  = "email_queue_wait"
	EmailDLQ   = "email_queue_dlq"
)

// EmailLoop is seed 000's single wait-queue loop: email_queue dead-letters
// rejected messages into email_queue_wait, whose TTL dead-letters them
// back; the worker itself publishes a message that gave up to the DLQ.
//
//	email_queue ─reject→ email_queue_wait (TTL) ─→ email_queue … worker ─publish→ email_queue_dlq
func EmailLoop(wait time.Duration) flow.Topology {
	return flow.Topology{Queues: []flow.Queue{
		{Name: EmailQueue, Role: flow.Work, DeadLetterTo: EmailWait},
		{Name: EmailWait, Role: flow.Wait, TTL: wait, DeadLetterTo: EmailQueue},
		{Name: EmailDLQ, Role: flow.DLQ},
	}}
}

// The seed's (000) settings and the lesson's workload, in lesson time.
const (
	q12Mails    = 20
	q12Wait     = 5 * time.Second // email_queue_wait's TTL
	q12MaxTries = 10              // deliveries (calls or fast fails) before the DLQ
	// q12Every is a mail every 2 s, plus 1 ms: every other delay in the
	// lesson is a multiple of 100 ms, so an arrival can never land on the
	// instant a retry comes back from the wait queue, and which one the
	// worker sees first never depends on goroutine scheduling.
	q12Every = 2*time.Second + time.Millisecond
)

// q12Outage is when the mail service is down, from each run's start.
var q12Outage = inmem.Outage{From: 5 * time.Second, Until: 35 * time.Second}

// q12BreakerSettings are seed 000's opossum options (timeout 3 s, 20 %
// errors, reset 10 s) in lesson time. The seed sets no minimum volume
// (opossum's default is 0); we ask for 5 calls in the window so that one
// unlucky call out of four cannot trip it. A RabbitMQ variant reuses this.
func q12BreakerSettings(clock lab.Clock, onChange func(ctx context.Context, from, to breaker.State)) breaker.Settings {
	return breaker.Settings{
		Name:                     "mail-service",
		Timeout:                  3 * time.Second,
		ErrorThresholdPercentage: 20,
		ResetTimeout:             10 * time.Second,
		RollingWindow:            10 * time.Second,
		Buckets:                  10,
		VolumeThreshold:          5,
		Clock:                    breaker.LessonClock(clock),
		OnStateChange:            onChange,
	}
}

// q12Breaker puts a breaker (seed 000's settings) in front of the mail
// service. It first announces the breaker's starting state, closed, so
// every rendering shows the breaker from its first call and counts only the
// calls it guards; each transition then becomes a breaker event naming the
// mail *current, whose call caused it.
func q12Breaker(env *lesson.Env, queue string, current *string) *breaker.Breaker {
	env.Stream.Emit(lab.Event{Kind: lab.Breaker, Actor: "breaker", Queue: queue, Note: breaker.StateClosed.String()})
	return breaker.New(q12BreakerSettings(env.Stream.Clock(), func(_ context.Context, _, to breaker.State) {
		env.Stream.Emit(lab.Event{Kind: lab.Breaker, Actor: "breaker", Task: *current, Queue: queue, Note: to.String()})
	}))
}

// q12Scenario is one run of the mail loop.
type q12Scenario struct {
	prefix   string // task ids are prefix + "01", "02", …
	mails    int
	every    time.Duration
	outage   inmem.Outage
	maxTries int
	breaker  bool // guard the mail service with a circuit breaker
}

// q12Result is what one run measured.
type q12Result struct {
	service  inmem.MailStats
	rejected int           // fast fails by the open breaker
	dead     int           // mails parked in the DLQ
	drain    time.Duration // from the run's start until nothing was left to do
}

// runQ12 runs the lesson's two scenarios, without and with the breaker,
// one after the other, and reports them side by side.
func runQ12(ctx context.Context, env *lesson.Env) error {
	base := q12Scenario{mails: q12Mails, every: q12Every, outage: q12Outage, maxTries: q12MaxTries}
	plain, guarded := base, base
	plain.prefix = "n"
	guarded.prefix, guarded.breaker = "b", true

	without, err := runQ12Scenario(ctx, env, plain)
	if err != nil {
		return err
	}
	with, err := runQ12Scenario(ctx, env, guarded)
	if err != nil {
		return err
	}
	env.Report(q12Table(without, with))
	return nil
}

// runQ12Scenario runs the seed's loop once: a producer sends a mail every
// sc.every to email_queue; the Mail-Worker calls the mail service (through
// the breaker, if any); a failed or fast-failed delivery retries through
// email_queue_wait (q12Wait) until sc.maxTries deliveries park it in the
// DLQ.
func runQ12Scenario(ctx context.Context, env *lesson.Env, sc q12Scenario) (q12Result, error) {
	const worker = "Mail-Worker"
	var res q12Result
	env.Phase(sc.title())
	b, err := env.Open(ctx)
	if err != nil {
		return res, err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, EmailLoop(q12Wait)); err != nil {
		return res, err
	}
	clock := env.Stream.Clock()
	start := clock.Elapsed()
	service := inmem.NewMailService(clock, sc.outage, env.Plan)
	var cb *breaker.Breaker
	var current string        // the mail being delivered, for breaker events; only the worker touches it
	calls := map[string]int{} // calls that reached the service, per mail: the attempt numbers
	if sc.breaker {
		cb = q12Breaker(env, EmailQueue, &current)
	}
	handle := func(ctx context.Context, d *flow.Delivery) flow.Decision {
		current = d.Task
		err := q12Call(ctx, env.Stream, cb, service, worker, d.Queue, d.Task, func() int { calls[d.Task]++; return calls[d.Task] })
		switch {
		case err == nil:
			return flow.Ack()
		case errors.Is(err, breaker.ErrOpen) || errors.Is(err, breaker.ErrTooManyRequests):
			res.rejected++
			env.Stream.Emit(lab.Event{Kind: lab.Rejected, Task: d.Task, Queue: d.Queue, Actor: "breaker", Note: err.Error()})
		}
		if d.Attempt >= sc.maxTries { // deliveries so far: calls and fast fails alike
			res.dead++
			return flow.Park(EmailDLQ, fmt.Sprintf("gave up after %d deliveries", d.Attempt))
		}
		return flow.Retry(EmailWait, err)
	}
	if err := b.Consume(ctx, flow.Consumer{Queue: EmailQueue, Actor: worker, Handle: handle}); err != nil {
		return res, err
	}
	stopInterrupt := env.InterruptAfter(b.Interrupt)
	err = q12Produce(ctx, env, b, sc)
	if err == nil {
		err = b.Wait(ctx)
	}
	stopInterrupt()
	res.service = service.Stats()
	res.drain = clock.Elapsed() - start
	return res, err
}

// title names the scenario for the phase marker.
func (sc q12Scenario) title() string {
	if sc.breaker {
		return fmt.Sprintf("Run 2 (%s01…): the same outage, with a circuit breaker", sc.prefix)
	}
	return fmt.Sprintf("Run 1 (%s01…): no circuit breaker", sc.prefix)
}

// q12Produce publishes sc.mails mails to email_queue, one every sc.every
// of lesson time.
func q12Produce(ctx context.Context, env *lesson.Env, b flow.Backend, sc q12Scenario) error {
	for i := 1; i <= sc.mails; i++ {
		if i > 1 {
			if err := env.Stream.Clock().Wait(ctx, sc.every); err != nil {
				return err
			}
		}
		if err := b.Publish(ctx, "Producer", EmailQueue, fmt.Sprintf("%s%02d", sc.prefix, i)); err != nil {
			return err
		}
	}
	return nil
}

// q12Call makes one delivery attempt of mail task, on either backend:
// through the breaker when there is one, which may refuse without calling
// the service (no started event then). A call that reaches the service is
// numbered by next and reported as started, then succeeded or failed.
func q12Call(ctx context.Context, st *lab.Stream, cb *breaker.Breaker, service *inmem.MailService, worker, queue, task string, next func() int) error {
	call := func(ctx context.Context) error {
		n := next()
		at := lab.Event{Task: task, Queue: queue, Actor: worker, Attempt: n}
		return st.Attempt(at, func() error { return service.Send(ctx, task, n) })
	}
	if cb == nil {
		return call(ctx)
	}
	return cb.Execute(ctx, call)
}

// q12Table puts the two runs side by side.
func q12Table(without, with q12Result) render.Table {
	row := func(name string, f func(q12Result) string) []string {
		return []string{name, f(without), f(with)}
	}
	n := func(f func(q12Result) int) func(q12Result) string {
		return func(r q12Result) string { return fmt.Sprint(f(r)) }
	}
	return render.Table{
		Title:  "Without and with a circuit breaker",
		Header: []string{"", "no breaker (n..)", "breaker (b..)"},
		Rows: [][]string{
			row("calls to the mail service", n(func(r q12Result) int { return r.service.Calls })),
			row("calls while it was down", n(func(r q12Result) int { return r.service.CallsDown })),
			row("fast fails by the breaker", n(func(r q12Result) int { return r.rejected })),
			row("mails delivered", n(func(r q12Result) int { return r.service.Delivered })),
			row("mails in the DLQ", n(func(r q12Result) int { return r.dead })),
			row("time to drain", func(r q12Result) string { return render.Stamp(r.drain.Milliseconds()) }),
		},
		Notes: []string{
			fmt.Sprintf("The service was down from %s to %s of each run; failed mails waited %s in email_queue_wait.",
				render.Stamp(q12Outage.From.Milliseconds()), render.Stamp(q12Outage.Until.Milliseconds()), q12Wait),
			"The breaker keeps the dead service quiet; the price is up to one reset timeout (10 s) of waiting after it is back.",
		},
	}
}

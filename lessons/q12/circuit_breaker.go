// Package q12 is lesson Q12 — circuit breaker.
//
// Notice: the mail service is down from 5 s to 35 s, and for its first
// 10 s every call hangs 5 s before the 503. Without a breaker (mails
// n01…) every retry from the wait queue hits the dead service and a hung
// call holds the worker 5 s: a retry storm. With the NestJS email
// service's opossum breaker (mails b01…: timeout 3 s, over 20 % failed
// opens it, reset 10 s) the first hung call times out at 3 s and opens it;
// calls fail fast back to the wait queue, a timer lets one trial through
// every 10 s, and the first trial after the service is back closes it.
// Every delivery, fast fails too, spends one of a mail's 15: the closing
// table counts attempts (calls) and fast fails apart. No mail is lost.
//
// Not from the seed: opossum's defaults for what the service leaves unset
// (no minimum volume, a 10 s rolling window in 10 buckets), the outage and
// its 5 s hang, and the workload: 20 mails, one every 3.501 s, a call
// taking 100 ms.
package q12

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queuelab/qlab/breaker"
	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/seeds/email"
)

var Lesson = lesson.Lesson{
	ID:         "Q12",
	WatchSpeed: 2, // a watchable pace in the TUI
	Length:     133 * time.Second,
	Title:      "Circuit breaker: fail fast while the mail service is down",
	Notice: "The mail service is down from 5 s to 35 s and, until 15 s, each call hangs 5 s: without " +
		"a breaker (n01…) every retry hits the dead service and a hung call holds the worker. " +
		"With the email service's opossum breaker (b01…: timeout 3 s, opens above 20 % failed, " +
		"reset 10 s) calls fail fast back to the wait queue until a trial finds the service back. " +
		"Fast fails spend a mail's 15 deliveries too; the table counts them apart from calls.",
	InMem:      runQ12,
	Rabbit:     runQ12,
	Faults:     true, // in the fault suite (lessons/faults)
	Topologies: func() []flow.Topology { return []flow.Topology{email.Loop(q12Wait)} },
	// At 40 the 30 s outage takes 0.75 s. At 100 (0.3 s) a stall of a
	// loaded machine under -race could outlast it: no call failed, so no
	// mail ever sat out the wait queue (TestParity/Q12, fresh clone, two
	// busy cores).
	TestSpeed: 40,
	// qlab compare: the mail service is down from 5 s to 35 s and a mail
	// arrives every 3.5 s, so at compare's 2 s one mail exists and nothing
	// waits for a retry; at 12 s three do, in the outage, with retries
	// waiting.
	CompareInterrupt: 12 * time.Second,
	Parity: lesson.Parity{TimingSensitive: "whether a retry lands inside the outage, what the breaker's window holds, and (with a fail rate) " +
		"which mails spend their deliveries on fast fails depend on when calls happen: real time on the broker"},
}

// The seed's settings and the lesson's workload, in lesson time.
const (
	q12Mails         = 20
	q12Wait          = 5 * time.Second // email_queue_wait's TTL
	q12MaxDeliveries = 15              // the seed's maxRetries: deliveries (calls or fast fails) before the DLQ
	// q12Every is a mail every 3.5 s, plus 1 ms. Every other delay in the
	// lesson is a multiple of 100 ms, so an arrival never lands on the
	// instant a retry comes back from the wait queue. No mail arrives while
	// a hung call waits out the 3 s timeout, and the mails circling the
	// wait queue come back about 0.5 s apart, so none queues behind a
	// 100 ms trial call: two mails never fail at one instant and come back
	// together, and which one the worker sees first never depends on
	// goroutine scheduling (TestQ12NoTwoMailsArriveAtOnce).
	q12Every = 3*time.Second + 501*time.Millisecond
)

// q12Outage is when the mail service is down, from each run's start: for
// its first 10 s a call hangs 5 s, longer than the breaker's 3 s timeout.
var q12Outage = inmem.Outage{From: 5 * time.Second, Until: 35 * time.Second, SlowUntil: 15 * time.Second, Hang: 5 * time.Second}

// q12BreakerSettings are the seed's opossum options (timeout 3 s, 20 %
// errors, reset 10 s) in lesson time. What the seed leaves unset is
// spelled out at opossum's defaults (and named by q12NotFromSeed): no minimum
// volume, a 10 s rolling window in 10 buckets.
func q12BreakerSettings(clock lab.Clock, onChange func(ctx context.Context, from, to breaker.State)) breaker.Settings {
	return breaker.Settings{
		Name:                     "mail-service",
		Timeout:                  3 * time.Second,
		ErrorThresholdPercentage: 20,
		ResetTimeout:             10 * time.Second,
		VolumeThreshold:          0,
		RollingWindow:            10 * time.Second,
		Buckets:                  10,
		Clock:                    breaker.LessonClock(clock),
		OnStateChange:            onChange,
	}
}

// q12Scenario is one run of the mail loop.
type q12Scenario struct {
	prefix        string // task ids are prefix + "01", "02", …
	mails         int
	every         time.Duration
	outage        inmem.Outage
	maxDeliveries int
	breaker       bool // guard the mail service with a circuit breaker
}

// q12Result is what one run measured.
type q12Result struct {
	service    inmem.MailStats
	deliveries int           // messages the worker took off email_queue
	most       int           // the most deliveries one mail took
	rejected   int           // fast fails by the breaker (deliveries without a call)
	timeouts   int           // calls the breaker cut off at its timeout
	dead       int           // mails parked in the DLQ
	drain      time.Duration // from the run's start until nothing was left to do
}

// runQ12 runs the lesson's two scenarios, without and with the breaker,
// one after the other, and reports them side by side.
func runQ12(ctx context.Context, env *lesson.Env) error {
	base := q12Scenario{mails: q12Mails, every: q12Every, outage: q12Outage, maxDeliveries: q12MaxDeliveries}
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
	env.Report(q12Table(env, without, with))
	return nil
}

// runQ12Scenario runs the seed's loop once: a producer sends a mail every
// sc.every to email_queue; the Mail-Worker calls the mail service (through
// the breaker, if any); a failed or fast-failed delivery retries through
// email_queue_wait (q12Wait) until sc.maxDeliveries deliveries park it in
// the DLQ.
func runQ12Scenario(ctx context.Context, env *lesson.Env, sc q12Scenario) (q12Result, error) {
	env.Phase(sc.title())
	b, err := env.Open(ctx)
	if err != nil {
		return q12Result{}, err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, email.Loop(q12Wait)); err != nil {
		return q12Result{}, err
	}
	clock := env.Stream.Clock()
	start := clock.Elapsed()
	w := &q12Worker{st: env.Stream, sc: sc, service: inmem.NewMailService(clock, sc.outage, env.Plan), calls: map[string]int{}}
	if sc.breaker {
		w.cb = w.newBreaker(clock)
		defer w.cb.Close() // stops a pending reset timer
	}
	if err := b.Consume(ctx, flow.Consumer{Queue: email.Queue, Actor: q12Actor, Handle: w.handle}); err != nil {
		return w.res, err
	}
	stopInterrupt := env.InterruptOn(b)
	err = q12Produce(ctx, env, b, sc)
	if err == nil {
		err = b.Wait(ctx)
	}
	stopInterrupt()
	// A redelivery after an interruption may still be in handle: read
	// the results under its lock.
	w.mu.Lock()
	defer w.mu.Unlock()
	w.res.service = w.service.Stats()
	w.res.drain = clock.Elapsed() - start
	return w.res, err
}

const q12Actor = "Mail-Worker"

// q12Worker is the seed's Mail-Worker. Its one consumer goroutine works
// under mu, which the run takes to read the results; the breaker's timer
// only emits.
type q12Worker struct {
	mu      sync.Mutex
	st      *lab.Stream
	sc      q12Scenario
	service *inmem.MailService
	cb      *breaker.Breaker // nil: no breaker
	calls   map[string]int   // calls that reached the service, per mail: the attempt numbers
	moves   []breaker.State  // transitions the current call caused, reported after its outcome
	res     q12Result
}

// newBreaker puts a breaker (the seed's settings) in front of the mail
// service. It first announces the starting state, closed, so every
// rendering shows the breaker from its first call and counts only the
// calls it guards. The reset timer's move to half-open is reported as it
// happens, naming no mail (no call caused it); a call's open or closed is
// reported after that call's outcome, naming its mail.
func (w *q12Worker) newBreaker(clock lab.Clock) *breaker.Breaker {
	w.st.Emit(lab.Event{Kind: lab.Breaker, Actor: "breaker", Queue: email.Queue, Note: breaker.StateClosed.String()})
	return breaker.New(q12BreakerSettings(clock, func(_ context.Context, _, to breaker.State) {
		if to == breaker.StateHalfOpen {
			w.st.Emit(lab.Event{Kind: lab.Breaker, Actor: "breaker", Queue: email.Queue, Note: to.String()})
			return
		}
		w.moves = append(w.moves, to)
	}))
}

// handle is the worker's decision for one delivery: ack a sent mail;
// otherwise retry through the wait queue, or park it once it has had
// sc.maxDeliveries deliveries. Like the seed, it counts deliveries, not
// calls: a fast fail is nacked like any failure and spends one.
func (w *q12Worker) handle(ctx context.Context, d *flow.Delivery) flow.Decision {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.res.deliveries++
	w.res.most = max(w.res.most, d.Attempt)
	budget := fmt.Sprintf("delivery %d of %d", d.Attempt, w.sc.maxDeliveries)
	err := w.deliver(ctx, d, budget)
	switch {
	case err == nil:
		return flow.Ack()
	case errors.Is(err, breaker.ErrOpen): // ErrTooManyRequests wraps it
		w.res.rejected++
		w.st.Emit(lab.Event{Kind: lab.Rejected, Task: d.Task, Queue: d.Queue, Actor: "breaker", Note: budget + ": " + err.Error()})
	case errors.Is(err, breaker.ErrTimeout):
		w.res.timeouts++
	}
	dec := w.policy().Decide(d, err)
	if dec.Action == flow.ActPark {
		w.res.dead++
	}
	return dec
}

// policy is the worker's retry budget (the shared flow.Retries): through
// the wait queue until sc.maxDeliveries deliveries, then the DLQ.
func (w *q12Worker) policy() flow.Retries {
	return flow.Retries{Via: email.WaitQueue, DLQ: email.DLQ, Max: w.sc.maxDeliveries,
		GaveUp: func(n int) string { return fmt.Sprintf("gave up after %d deliveries", n) }}
}

// deliver makes one delivery's call to the mail service, through the
// breaker when there is one. The breaker may refuse without calling (no
// started event then), and with a timeout it runs the call on its own
// goroutine and returns at the deadline: so the call itself only reports
// that it started, and the worker reports the outcome the breaker gave.
func (w *q12Worker) deliver(ctx context.Context, d *flow.Delivery, budget string) error {
	n := w.calls[d.Task] + 1 // the attempt number, if the call is made
	e := lab.Event{Task: d.Task, Queue: d.Queue, Actor: q12Actor, Attempt: n}
	// The call may outlive Execute (abandoned at the timeout, on the
	// breaker's goroutine): it reads only its own copy of the event.
	started := e
	started.Kind = lab.Started
	call := func(ctx context.Context) error {
		w.st.Emit(started)
		return w.service.Send(ctx, d.Task, n)
	}
	var err error
	if w.cb == nil {
		err = call(ctx)
	} else {
		err = w.cb.Execute(ctx, call)
	}
	if errors.Is(err, breaker.ErrOpen) {
		return err // refused: no call was made
	}
	w.calls[d.Task] = n
	e.Kind, e.Note = lab.Succeeded, budget
	if err != nil {
		e.Kind, e.Note = lab.Failed, err.Error()+" ("+budget+")"
	}
	w.st.Emit(e)
	for _, to := range w.moves {
		w.st.Emit(lab.Event{Kind: lab.Breaker, Actor: "breaker", Task: d.Task, Queue: email.Queue, Note: to.String()})
	}
	w.moves = w.moves[:0]
	return err
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
		if err := b.Publish(ctx, "Producer", email.Queue, fmt.Sprintf("%s%02d", sc.prefix, i)); err != nil {
			return err
		}
	}
	return nil
}

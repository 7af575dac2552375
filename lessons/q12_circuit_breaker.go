package lessons

// Q12 — circuit breaker.
//
// Notice: the mail service is down from 5 s to 35 s. Without a breaker
// (mails n01…) every retry from the wait queue hits the dead service: a
// retry storm. With one (mails b01…) 2 failed calls of 5 (over 20 %) open it, calls fail fast
// and go back to the wait queue, one trial call goes through every 10 s,
// and the first trial after the service is back closes it. No mail is lost.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/breaker"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

var q12 = Lesson{
	ID:    "Q12",
	Title: "Circuit breaker: fail fast while the mail service is down",
	Notice: "The mail service is down from 5 s to 35 s. Without a breaker (mails n01…) every retry hits the dead service: a retry storm. " +
		"With one (mails b01…) it opens once 2 of its 5 calls have failed (over 20 %), calls fail fast back to the wait queue, one trial call goes through every 10 s, and it closes once the service is back. No mail is lost.",
	InMem:  runQ12,
	Rabbit: runQ12Rabbit,
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

// A RabbitMQ variant reuses the backend-neutral parts: q12BreakerSettings,
// q12Outage with inmem.MailService (it only needs a lab.Clock), the
// constants, q12Result and q12Table; only runQ12Scenario's queues change.

// q12Breaker puts a breaker (seed 000's settings) in front of the mail
// service. It first announces the breaker's starting state, closed, so
// every rendering shows the breaker from its first call and counts only the
// calls it guards; each transition then becomes a breaker event naming the
// mail *current, whose call caused it.
func q12Breaker(env *Env, queue string, current *string) *breaker.Breaker {
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

func runQ12(ctx context.Context, env *Env) error {
	return q12BothRuns(ctx, env, runQ12Scenario)
}

// q12BothRuns runs the lesson's two scenarios, without and with the
// breaker, one after the other with run (a backend's mail loop), and
// reports them side by side.
func q12BothRuns(ctx context.Context, env *Env, run func(context.Context, *Env, q12Scenario) (q12Result, error)) error {
	base := q12Scenario{mails: q12Mails, every: q12Every, outage: q12Outage, maxTries: q12MaxTries}
	plain, guarded := base, base
	plain.prefix = "n"
	guarded.prefix, guarded.breaker = "b", true

	without, err := run(ctx, env, plain)
	if err != nil {
		return err
	}
	with, err := run(ctx, env, guarded)
	if err != nil {
		return err
	}
	env.Report(q12Table(without, with))
	return nil
}

// runQ12Scenario runs the seed's loop: a producer sends a mail every
// sc.every to email_queue; the Mail-Worker calls the mail service (through
// the breaker, if any); a failed or fast-failed delivery waits q12Wait in
// email_queue_wait and comes back, until sc.maxTries deliveries send it to
// email_queue_dlq.
func runQ12Scenario(ctx context.Context, env *Env, sc q12Scenario) (q12Result, error) {
	const worker = "Mail-Worker"
	clock := env.Stream.Clock()
	start := clock.Elapsed()
	sys := inmem.New(ctx, env.Stream, env.Plan)
	mainQ := sys.Queue("email_queue", sc.mails+1)
	dlq := sys.Queue("email_queue_dlq", sc.mails+1)
	service := inmem.NewMailService(clock, sc.outage, env.Plan)

	var res q12Result
	var cb *breaker.Breaker
	var current string // the task the worker is delivering; only the worker touches it
	if sc.breaker {
		cb = q12Breaker(env, mainQ.Name(), &current)
	}

	tries := map[*inmem.Task]int{} // deliveries per mail, like RabbitMQ's x-death count
	sys.Worker(worker, mainQ, func(t *inmem.Task) {
		current = t.ID
		tries[t]++
		err := q12Call(sys.Context(), env.Stream, cb, service, worker, mainQ.Name(), t.ID, func() int { t.Attempt++; return t.Attempt })
		switch {
		case err == nil:
			return
		case errors.Is(err, breaker.ErrOpen) || errors.Is(err, breaker.ErrTooManyRequests):
			res.rejected++
			env.Stream.Emit(lab.Event{Kind: lab.Rejected, Task: t.ID, Queue: mainQ.Name(), Actor: "breaker", Note: err.Error()})
		}
		if tries[t] >= sc.maxTries {
			res.dead++
			mainQ.DeadLetter(worker, t, dlq, fmt.Sprintf("gave up after %d deliveries", tries[t]))
			return
		}
		sys.Schedule(worker, t, "email_queue_wait", mainQ, q12Wait)
	})
	// The DLQ is for a person to inspect; this worker only holds what lands there.
	sys.Worker("DLQ-Worker", dlq, func(*inmem.Task) {})

	stopInterrupt := env.interruptAfter(func() { sys.Crash("process") })
	q12Produce(sys, mainQ, sc) // this goroutine is the producer; Wait counts only what it sent
	err := sys.Wait(ctx)
	stopInterrupt()
	res.service = service.Stats()
	res.drain = clock.Elapsed() - start
	return res, err
}

// q12Produce enqueues sc.mails mails, one every sc.every.
func q12Produce(sys *inmem.System, q *inmem.Queue, sc q12Scenario) {
	for i := 1; i <= sc.mails; i++ {
		if i > 1 && sys.Sleep(sys.Context(), sc.every) != nil {
			return
		}
		q.Enqueue("Producer", fmt.Sprintf("%s%02d", sc.prefix, i))
	}
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

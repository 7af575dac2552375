//go:build qlabex

package decision

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/breaker"
	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/seeds/email"
)

// scenario is one plan: mails arriving at a steady pace while the mail
// service has an outage.
type scenario struct {
	name   string
	mails  int
	every  time.Duration
	outage inmem.Outage
}

// forever is an outage end no run reaches.
const forever = 24 * time.Hour

// The plans: the lesson's outage (hanging calls, then a fast 503), a
// short one, and a service that never comes back, where every mail must
// end in the DLQ after exactly MaxDeliveries deliveries. The pace is off
// the 100 ms grid, so no arrival meets a retry coming back.
var scenarios = []scenario{
	{"the lesson's outage (down 5–35 s, calls hang until 15 s)", 20, 3501 * time.Millisecond,
		inmem.Outage{From: 5 * time.Second, Until: 35 * time.Second, SlowUntil: 15 * time.Second, Hang: 5 * time.Second}},
	{"a short outage (down 2–14 s, a fast 503)", 12, 1001 * time.Millisecond,
		inmem.Outage{From: 2 * time.Second, Until: 14 * time.Second}},
	{"a service that never comes back (down from 3 s)", 5, 1001 * time.Millisecond,
		inmem.Outage{From: 3 * time.Second, Until: forever}},
}

// hotLoop is how many deliveries of one mail the checker lets through
// before it parks the mail itself: a decision that never waits would
// otherwise spin without lesson time passing.
const hotLoop = 3 * MaxDeliveries

func TestBreakerDecision(t *testing.T) {
	c := check.New(t)
	for _, sc := range scenarios {
		plan := lab.Plan{Work: 100 * time.Millisecond}
		for i := 1; i <= sc.mails; i++ {
			plan.Tasks = append(plan.Tasks, fmt.Sprintf("m%02d", i))
		}
		w := &worker{deliveries: map[string]int{}, delivered: map[string]bool{}}
		r := check.InMem(t, check.Named{Name: sc.name, Plan: plan}, func(ctx context.Context, s *lab.Stream) error {
			return w.run(ctx, s, sc, plan)
		})
		c.Accounted(r, lab.FateDone, lab.FateDead)
		c.That(r, "the breaker opens while the service is down: your calls go through it", w.opened > 0,
			"the breaker never opened", "it opens during the outage", firstFailed(r))
		c.That(r, "no call reaches the service while the breaker is open", w.whileOpen == "",
			w.whileOpen, "no call while it is open: they fail fast", w.whileOpenTask)
		c.That(r, "the decision: ack a sent mail, retry the rest via "+EmailWait+", park at the last delivery", w.wrong == "",
			w.wrong, "retry via "+EmailWait+" until the last delivery", w.wrongTask)
		for _, id := range plan.Tasks {
			if len(r.Of(id, lab.DeadLettered)) == 0 {
				continue
			}
			c.Expect(r, fmt.Sprintf("a mail is parked only after its %d deliveries", MaxDeliveries),
				fmt.Sprintf("%s parked after %d deliveries", id, w.deliveries[id]),
				fmt.Sprintf("%s parked after %d deliveries", id, MaxDeliveries), id)
		}
	}
}

// worker runs the student's Handle in lesson Q12's loop and watches it.
type worker struct {
	st      *lab.Stream
	service *inmem.MailService
	cb      *breaker.Breaker

	mu         sync.Mutex // the breaker may run send on a goroutine of its own
	deliveries map[string]int
	delivered  map[string]bool // the service took the mail
	calls      map[string]int  // calls per mail: the attempt numbers of the service

	opened                   int
	whileOpen, whileOpenTask string // the first call made while the breaker was open
	wrong, wrongTask         string // the first wrong decision
}

// run is one run of the loop on an in-memory flow: a mail every sc.every
// to email_queue, the Mail-Worker's decisions carried out by the flow.
func (w *worker) run(ctx context.Context, s *lab.Stream, sc scenario, plan lab.Plan) error {
	w.st, w.calls = s, map[string]int{}
	b := inmem.NewFlow(ctx, s, sc.mails+1)
	defer b.Close(context.Background())
	if err := b.Declare(ctx, email.Loop(5*time.Second)); err != nil {
		return err
	}
	clock := s.Clock()
	w.service = inmem.NewMailService(clock, sc.outage, plan)
	w.cb = breaker.New(breaker.Settings{
		Name: "mail-service", Timeout: 3 * time.Second, ErrorThresholdPercentage: 20, ResetTimeout: 10 * time.Second,
		RollingWindow: 10 * time.Second, Buckets: 10, Clock: breaker.LessonClock(clock),
		OnStateChange: func(_ context.Context, _, to breaker.State) {
			if to == breaker.StateOpen {
				w.mu.Lock()
				w.opened++
				w.mu.Unlock()
			}
			s.Emit(lab.Event{Kind: lab.Breaker, Actor: "breaker", Queue: EmailQueue, Note: to.String()})
		},
	})
	defer w.cb.Close()
	if err := b.Consume(ctx, flow.Consumer{Queue: EmailQueue, Actor: "Mail-Worker", Handle: w.handle}); err != nil {
		return err
	}
	for i, id := range plan.Tasks {
		if i > 0 {
			if err := clock.Wait(ctx, sc.every); err != nil {
				return err
			}
		}
		if err := b.Publish(ctx, "Producer", EmailQueue, id); err != nil {
			return err
		}
	}
	return b.Wait(ctx)
}

// handle wraps the student's Handle: it reports each call and its
// outcome, a fast fail as such, and notes a wrong decision.
func (w *worker) handle(ctx context.Context, d *flow.Delivery) flow.Decision {
	w.mu.Lock()
	w.deliveries[d.Task]++
	n := w.deliveries[d.Task]
	w.mu.Unlock()
	call := &call{}
	send := func(ctx context.Context) error { return w.send(ctx, d, call) }
	if n > hotLoop {
		w.note(&w.wrong, &w.wrongTask, d.Task, fmt.Sprintf("%s was delivered %d times without waiting: the checker parked it", d.Task, n))
		return flow.Park(EmailDLQ, "stopped by the checker: a loop that never waits")
	}
	dec := Handle(ctx, d, w.cb, send)
	made, err, done := call.result()
	e := d.Event("Mail-Worker")
	e.Attempt = max(e.Attempt, 1)
	switch {
	case made && done && err == nil:
		e.Kind, e.Note = lab.Succeeded, fmt.Sprintf("delivery %d of %d", d.Attempt, MaxDeliveries)
	case made:
		why := "cut off at the breaker's 3 s timeout"
		if done {
			why = err.Error()
		}
		e.Kind, e.Note = lab.Failed, fmt.Sprintf("%s (delivery %d of %d)", why, d.Attempt, MaxDeliveries)
	default:
		e.Kind, e.Actor, e.Note = lab.Rejected, "breaker", fmt.Sprintf("fast fail, no call (delivery %d of %d)", d.Attempt, MaxDeliveries)
	}
	sent := made && done && err == nil
	if dec.Action == flow.ActAck && !sent {
		e.Kind, e.Note = lab.Lost, "acked, but the mail service never took it: the mail is gone"
	}
	w.st.Emit(e)
	w.judge(d, dec, sent)
	return dec
}

// judge notes the first decision that is not the seed's.
func (w *worker) judge(d *flow.Delivery, dec flow.Decision, sent bool) {
	want, got := "", check.Decision(dec)
	switch {
	case sent:
		want = "ack"
	case d.Attempt >= MaxDeliveries:
		want = "park in " + EmailDLQ
	default:
		want = "retry via " + EmailWait
	}
	if got != want {
		w.note(&w.wrong, &w.wrongTask, d.Task, fmt.Sprintf("%s, delivery %d (%s): %s, not %s", d.Task, d.Attempt, map[bool]string{true: "sent", false: "not sent"}[sent], got, want))
	}
}

func (w *worker) note(what, task *string, id, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if *what == "" {
		*what, *task = text, id
	}
}

// call is what became of the one call a delivery may make.
type call struct {
	mu         sync.Mutex
	made, done bool
	err        error
}

func (c *call) result() (made bool, err error, done bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.made, c.err, c.done
}

// send is the call to the mail service the student's Handle gets.
func (w *worker) send(ctx context.Context, d *flow.Delivery, c *call) error {
	c.mu.Lock()
	again := c.made
	c.made = true
	c.mu.Unlock()
	if again {
		return fmt.Errorf("one call per delivery: send was already called")
	}
	if w.cb.State() == breaker.StateOpen {
		w.note(&w.whileOpen, &w.whileOpenTask, d.Task, fmt.Sprintf("%s, delivery %d: called the service while the breaker was open", d.Task, d.Attempt))
	}
	w.mu.Lock()
	w.calls[d.Task]++
	n := w.calls[d.Task]
	w.mu.Unlock()
	w.st.Emit(lab.Event{Kind: lab.Started, Task: d.Task, Queue: d.Queue, Actor: "Mail-Worker", Attempt: d.Attempt, Note: fmt.Sprintf("call %d to the mail service", n)})
	err := w.service.Send(ctx, d.Task, n)
	c.mu.Lock()
	c.done, c.err = true, err
	c.mu.Unlock()
	return err
}

// firstFailed is the task of the run's first failed call ("" if none):
// its events show the outage as the mail met it.
func firstFailed(r check.Run) string {
	for _, e := range r.Events {
		if e.Kind == lab.Failed {
			return e.Task
		}
	}
	return ""
}

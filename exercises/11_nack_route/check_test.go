//go:build qlabex

package nackroute

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

// scenario is one case: a policy and emails whose first fails[task]
// attempts fail (poison: every one).
type scenario struct {
	name   string
	policy Policy
	tasks  []string
	fails  map[string]int
}

// poison fails every attempt.
const poison = 1 << 20

// The cases: the document's five attempts and the waits its code really
// makes (30 s, 1 min, 2 min, 5 min: job.retries++ comes before
// getRetryDelay, so RETRY_DELAYS[0], 10 s, is never used; lessons Q14 and
// Q15 show it), scaled 1/200, and three attempts with other delays, so a
// constant passes neither both schedules nor both limits. E succeeds on
// its last attempt: parking it one attempt early fails.
var scenarios = []scenario{
	{name: "the document's policy as its code runs: 5 attempts, retries after 30 s, 1 min, 2 min, 5 min (scaled 1/200)",
		policy: Policy{Attempts: notify.MaxRetries, Delays: scaled(notify.Waits(), 200)},
		tasks:  []string{"A", "B", "C", "D"}, fails: map[string]int{"B": 1, "C": poison}},
	{name: "3 attempts, retries after 250 ms, 500 ms",
		policy: Policy{Attempts: 3, Delays: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}},
		tasks:  []string{"E", "F", "G"}, fails: map[string]int{"E": 2, "F": poison}},
}

func scaled(ds []time.Duration, by time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / by
	}
	return out
}

// expires deletes a queue of the checker's that nobody used for a
// minute, should a killed check leave it behind (email-dlx is
// auto-delete: it goes with its last binding).
const expires = int64(60_000)

func TestNackRoute(t *testing.T) {
	c := check.New(t)
	url, ok := c.Broker()
	if !ok {
		return
	}
	for _, sc := range scenarios {
		runScenario(c, url, sc)
	}
}

// runScenario declares the topology under a fresh prefix on a connection
// of its own, runs the student's Settle on every delivery, reads where
// each email landed, checks it, and deletes what it declared.
func runScenario(c *check.Checker, url string, sc scenario) {
	r := check.Run{Name: sc.name}
	conn, err := amqp.Dial(url)
	if err != nil {
		c.That(r, "a RabbitMQ broker to check against", false, err.Error(), "a connection", "")
		return
	}
	defer conn.Close()
	prefix := rabbit.RunNames().Prefix
	n := Names{EmailQueue: prefix + notify.EmailQueue, RetryQueue: prefix + notify.RetryQueue,
		DLX: prefix + notify.DLX, DLQ: prefix + notify.DLQ, DLQKey: prefix + notify.DLQKey}
	w := &worker{sc: sc, n: n, prefix: prefix, start: time.Now(), tasks: map[string]*task{}}
	var created []string
	defer func() { cleanUp(conn, n.DLX, created) }() // before the connection closes
	declared := declare(conn, n, &created)
	if !c.That(r, "the broker accepts your arguments", declared == nil, fmt.Sprint(declared),
		"email-queue declared with your EmailQueueArgs", "") {
		return
	}
	if err := w.run(conn); err != nil {
		w.stopped = err.Error()
	}
	w.land(conn)
	r.Events = w.events
	w.check(c, r)
}

// declare declares the document's topology under n: email-dlx (direct,
// auto-delete), email-dlq bound to it with n.DLQKey, email-retry-queue
// dead-lettering back to email-queue, and email-queue with the student's
// arguments. Each queue carries x-expires and goes into created.
func declare(conn *amqp.Connection, n Names, created *[]string) error {
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.ExchangeDeclare(n.DLX, amqp.ExchangeDirect, false, true, false, false, nil); err != nil {
		return err
	}
	queues := []struct {
		name string
		args amqp.Table
	}{
		{n.DLQ, nil},
		{n.RetryQueue, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": n.EmailQueue}},
		{n.EmailQueue, EmailQueueArgs(n)},
	}
	for _, q := range queues {
		with := amqp.Table{"x-expires": expires}
		for k, v := range q.args {
			with[k] = v
		}
		if _, err := ch.QueueDeclare(q.name, false, false, false, false, with); err != nil {
			return fmt.Errorf("declaring %s with %v: %w", strings.TrimPrefix(q.name, prefixOf(n)), q.args, err)
		}
		*created = append(*created, q.name)
	}
	return ch.QueueBind(n.DLQ, n.DLQKey, n.DLX, false, nil)
}

func prefixOf(n Names) string { return strings.TrimSuffix(n.EmailQueue, notify.EmailQueue) }

// cleanUp deletes the checker's queues and its exchange.
func cleanUp(conn *amqp.Connection, exchange string, queues []string) {
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	defer ch.Close()
	for _, q := range queues {
		_, _ = ch.QueueDelete(q, false, false, false)
	}
	_ = ch.ExchangeDelete(exchange, false, false)
}

// task is what the worker saw of one email.
type task struct {
	deliveries []*delivery
	sent       bool   // acked after a send that worked
	parked     bool   // nacked or rejected without requeue: it left email-queue by the dead-letter route
	gaveUp     string // why the worker stopped following it
	landed     string // where it was found at the end
	via        string // the exchange it was found to have come through (the DLX, for a dead-lettered message)
	deaths     rabbit.Deaths
}

// delivery is one delivery of an email and how the student settled it.
type delivery struct {
	attempt int
	retries int // the body's
	failed  bool
	settles []string // "ack", "nack requeue=false", …
	requeue bool
	steps   []string // the settles and the copies, in order
}

// worker consumes email-queue, fails the plan's attempts and hands each
// delivery to the student's Settle, recording every settle and publish.
type worker struct {
	sc      scenario
	n       Names
	prefix  string
	start   time.Time
	tasks   map[string]*task
	events  []lab.Event
	stopped string // why the run ended before every email was settled
}

func (w *worker) emit(e lab.Event) {
	e.TMs = time.Since(w.start).Milliseconds()
	if e.Actor == "" {
		e.Actor = "Worker"
	}
	w.events = append(w.events, e)
}

// seed shows a broker name under the document's name.
func (w *worker) seed(name string) string { return strings.TrimPrefix(name, w.prefix) }

// bound is how long the run may take: every retry of every email one
// after another, and a few seconds for the broker.
func (w *worker) bound() time.Duration {
	var sum time.Duration
	for r := 1; r < w.sc.policy.Attempts; r++ {
		sum += w.sc.policy.Delay(r)
	}
	return time.Duration(len(w.sc.tasks))*sum + 5*time.Second
}

// run publishes the emails and handles deliveries until each is sent or
// parked, the channel dies, Settle fails, or the bound passes.
func (w *worker) run(conn *amqp.Connection) error {
	pub, err := check.NewPublisher(conn)
	if err != nil {
		return err
	}
	defer pub.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.Qos(1, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.Consume(w.n.EmailQueue, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.bound())
	defer cancel()
	for _, id := range w.sc.tasks {
		w.tasks[id] = &task{}
		w.emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: notify.EmailQueue, Actor: "API"})
		msg := amqp.Publishing{MessageId: id, ContentType: "application/json", Body: notify.NewJob(id, time.UnixMilli(1707217200000)).Encode()}
		if err := pub.Publish(ctx, w.n.EmailQueue, msg); err != nil {
			return err
		}
	}
	for !w.finished() {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return errors.New("the worker's channel closed")
			}
			if err := w.handle(ctx, ch, pub, d); err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("still waiting after %v", w.bound())
		}
	}
	return nil
}

// finished reports whether every email was sent, parked or given up on.
func (w *worker) finished() bool {
	for _, t := range w.tasks {
		if !t.sent && !t.parked && t.gaveUp == "" {
			return false
		}
	}
	return true
}

// handle runs one delivery through Settle and records what it did.
func (w *worker) handle(ctx context.Context, ch *amqp.Channel, pub *check.Publisher, d amqp.Delivery) error {
	job, err := notify.DecodeJob(d.Body)
	if err != nil {
		_ = d.Ack(false)
		return fmt.Errorf("a message in email-queue is no email job (%v): publish job.Encode() as the copy's body", err)
	}
	id := job.Data.NotificationID
	t := w.tasks[id]
	if t == nil { // not one of ours: impossible under a private prefix
		return d.Ack(false)
	}
	if d.Redelivered {
		w.emit(lab.Event{Kind: lab.Redelivered, Task: id, Queue: notify.EmailQueue, Actor: "Broker", Note: "requeued: straight back, no wait"})
		t.gaveUp = "requeued: it came straight back to email-queue (redelivered) with no wait, a hot loop"
		return d.Ack(false) // the checker ends the loop
	}
	attempt := len(t.deliveries) + 1
	if attempt > w.sc.policy.Attempts {
		t.gaveUp = fmt.Sprintf("delivered a %d%s time: more than %d attempts (the copy's retries never reach the limit)", attempt, suffix(attempt), w.sc.policy.Attempts)
		return d.Ack(false)
	}
	dl := &delivery{attempt: attempt, retries: job.Retries, failed: attempt <= w.sc.fails[id]}
	t.deliveries = append(t.deliveries, dl)
	w.emit(lab.Event{Kind: lab.Started, Task: id, Queue: notify.EmailQueue, Attempt: attempt})
	var sendErr error
	if dl.failed {
		sendErr = errors.New("SMTP timeout")
		w.emit(lab.Event{Kind: lab.Failed, Task: id, Queue: notify.EmailQueue, Attempt: attempt, Note: sendErr.Error()})
	} else {
		w.emit(lab.Event{Kind: lab.Succeeded, Task: id, Queue: notify.EmailQueue, Attempt: attempt})
	}
	rec := &settleRecorder{real: d.Acknowledger}
	d.Acknowledger = rec
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = Settle(sctx, d, job, sendErr, w.n, w.sc.policy, w.publishFor(pub, id, dl.attempt, rec))
	cancel()
	dl.settles, dl.requeue, dl.steps = rec.done()
	w.settled(t, id, dl)
	if err != nil {
		return fmt.Errorf("Settle returned an error on %s's attempt %d: %w", id, attempt, err)
	}
	if len(dl.settles) == 0 {
		return fmt.Errorf("%s's attempt %d was never settled: at prefetch 1 the worker gets nothing more", id, attempt)
	}
	// A round trip: the broker answers it only if the settles before it
	// were valid, so a second settle's 406 shows here.
	if err := ch.Qos(1, 0, false); err != nil {
		return fmt.Errorf("the broker closed the channel after %s's attempt %d (%s): %w", id, attempt, strings.Join(dl.settles, ", then "), err)
	}
	return nil
}

func suffix(n int) string {
	switch n % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

// settled marks t sent or parked from dl's last settle.
func (w *worker) settled(t *task, id string, dl *delivery) {
	if len(dl.settles) == 0 {
		return
	}
	last := dl.settles[len(dl.settles)-1]
	switch {
	case last == "ack" && !dl.failed:
		t.sent = true
	case !dl.requeue && last != "ack":
		t.parked = true
		w.emit(lab.Event{Kind: lab.Moved, Task: id, Queue: notify.EmailQueue, To: "email-queue's dead-letter route", Attempt: dl.attempt, Note: last})
	}
}

// publishFor is the Publish Settle gets for attempt of task id: the
// checker's publisher, recording each copy in rec.
func (w *worker) publishFor(pub *check.Publisher, id string, attempt int, rec *settleRecorder) Publish {
	return func(ctx context.Context, queue string, msg amqp.Publishing) error {
		retries := "no email job"
		if job, err := notify.DecodeJob(msg.Body); err == nil {
			retries = fmt.Sprintf("retries %d", job.Retries)
		}
		rec.step(fmt.Sprintf("a copy to %s, %s, expiration %q", w.seed(queue), retries, msg.Expiration))
		ms, _ := strconv.ParseInt(msg.Expiration, 10, 64)
		w.emit(lab.Event{Kind: lab.Scheduled, Task: id, Queue: notify.EmailQueue, Via: w.seed(queue), To: notify.EmailQueue,
			Attempt: attempt, DelayMs: ms, Note: fmt.Sprintf("a copy, expiration %q", msg.Expiration)})
		return pub.Publish(ctx, queue, msg)
	}
}

// settleRecorder stands between the student's settles and the channel:
// it records each and passes it on, so the broker answers as it would.
type settleRecorder struct {
	real    amqp.Acknowledger
	mu      sync.Mutex
	settles []string
	steps   []string // settles and copies, in order
	requeue bool
}

func (r *settleRecorder) add(s string, requeue bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settles, r.steps = append(r.settles, s), append(r.steps, s)
	r.requeue = r.requeue || requeue
}

// step records a copy Settle published.
func (r *settleRecorder) step(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, s)
}

// done returns the settles, whether one requeued, and every step.
func (r *settleRecorder) done() ([]string, bool, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.settles...), r.requeue, append([]string(nil), r.steps...)
}

func (r *settleRecorder) Ack(tag uint64, multiple bool) error {
	r.add("ack", false)
	return r.real.Ack(tag, multiple)
}

func (r *settleRecorder) Nack(tag uint64, multiple, requeue bool) error {
	r.add(fmt.Sprintf("nack requeue=%v", requeue), requeue)
	return r.real.Nack(tag, multiple, requeue)
}

func (r *settleRecorder) Reject(tag uint64, requeue bool) error {
	r.add(fmt.Sprintf("reject requeue=%v", requeue), requeue)
	return r.real.Reject(tag, requeue)
}

// land finds every email that is not sent: in email-dlq,
// email-retry-queue or still in email-queue (consumed: the queues are the
// checker's), waiting a few seconds for the broker's dead-lettering.
func (w *worker) land(conn *amqp.Connection) {
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	defer ch.Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		for _, q := range []string{w.n.DLQ, w.n.RetryQueue, w.n.EmailQueue} {
			w.drain(ch, q)
		}
		if w.allFound() || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allFound reports whether every parked email was found somewhere.
func (w *worker) allFound() bool {
	for _, t := range w.tasks {
		if t.parked && t.landed == "" {
			return false
		}
	}
	return true
}

func (w *worker) drain(ch *amqp.Channel, queue string) {
	for {
		m, ok, err := ch.Get(queue, true)
		if err != nil || !ok {
			return
		}
		job, err := notify.DecodeJob(m.Body)
		t := w.tasks[job.Data.NotificationID]
		if err != nil || t == nil {
			continue
		}
		t.landed, t.via, t.deaths = w.seed(queue), m.Exchange, rabbit.ReadDeaths(m.Headers)
		w.emit(lab.Event{Kind: lab.DeadLettered, Task: job.Data.NotificationID, Queue: notify.EmailQueue, To: t.landed, Actor: "Broker",
			Note: "found there; x-death: " + t.deaths.Describe(w.seed)})
	}
}

// check records the exercise's checks for one scenario.
func (w *worker) check(c *check.Checker, r check.Run) {
	c.That(r, "every delivery is settled and the run ends", w.stopped == "", w.stopped, "every email sent or parked", "")
	for _, id := range w.sc.tasks {
		t := w.tasks[id]
		for _, dl := range t.deliveries {
			w.checkDelivery(c, r, id, dl)
		}
		if t.parked {
			c.That(r, "a nack reaches email-dlq through email-dlx", w.dead(t), w.fate(t),
				fmt.Sprintf("in %s, dead-lettered from %s (rejected) through %s", notify.DLQ, notify.EmailQueue, notify.DLX), id)
		}
	}
	for _, id := range w.sc.tasks { // after the route: a wrong route is named as such first
		c.Expect(r, "every email ends sent, or in email-dlq after its last attempt", w.fate(w.tasks[id]), w.wantFate(id), id)
	}
}

// checkDelivery checks how one delivery was settled.
func (w *worker) checkDelivery(c *check.Checker, r check.Run, id string, dl *delivery) {
	at := fmt.Sprintf("%s's attempt %d", id, dl.attempt)
	settles := strings.Join(dl.settles, ", then ")
	if len(dl.settles) == 0 {
		settles = "never settled"
	}
	c.That(r, "each delivery is settled exactly once", len(dl.settles) == 1, at+": "+settles,
		at+": one ack, nack or reject (a second settle makes the broker close the channel: 406 PRECONDITION_FAILED, unknown delivery tag)", id)
	c.That(r, "never requeued: a retry waits in email-retry-queue", !dl.requeue, at+": "+settles+", straight back to email-queue with no wait",
		at+": requeue false", id)
	switch {
	case !dl.failed:
		c.Expect(r, "a sent email is acked", w.did(dl), "ack", id)
	case dl.attempt < w.sc.policy.Attempts:
		want := fmt.Sprintf("%s: a copy to %s, retries %d, expiration %q, then ack", at, notify.RetryQueue, dl.attempt,
			strconv.FormatInt(w.sc.policy.Delay(dl.attempt).Milliseconds(), 10))
		got := at + ": " + w.did(dl)
		c.That(r, "a failure with attempts left: a copy to email-retry-queue with its delay, then ack", got == want, got,
			fmt.Sprintf("%s (Delay(%d) in ms)", want, dl.attempt), id)
	default:
		c.Expect(r, "the last failure is a nack (requeue false), no copy", at+": "+w.did(dl), at+": nack requeue=false", id)
	}
}

// did says what Settle did with a delivery, in order: copies and settles.
func (w *worker) did(dl *delivery) string {
	if len(dl.settles) == 0 {
		return strings.Join(append(dl.steps, "never settled"), ", then ")
	}
	return strings.Join(dl.steps, ", then ")
}

// fate says where an email ended, in the document's names.
func (w *worker) fate(t *task) string {
	n := len(t.deliveries)
	after := fmt.Sprintf("after %d attempt%s", n, map[bool]string{true: "", false: "s"}[n == 1])
	switch {
	case t.sent:
		return fmt.Sprintf("sent on attempt %d", n)
	case t.gaveUp != "":
		return t.gaveUp
	case w.dead(t):
		return fmt.Sprintf("in %s %s, dead-lettered from %s (rejected) through %s", notify.DLQ, after, notify.EmailQueue, notify.DLX)
	case t.landed == notify.DLQ && w.rejected(t):
		return fmt.Sprintf("in %s %s, dead-lettered from %s (rejected) through %s: not through %s, the exchange the document binds %s to",
			notify.DLQ, after, notify.EmailQueue, exchangeName(w.seed(t.via)), notify.DLX, notify.DLQ)
	case t.landed == notify.DLQ:
		return fmt.Sprintf("in %s %s, x-death: %s: published there, not dead-lettered by a nack", notify.DLQ, after, t.deaths.Describe(w.seed))
	case t.landed == notify.RetryQueue:
		return fmt.Sprintf("in %s %s, x-death: %s: it stays there, nothing sends it back without an expiration", notify.RetryQueue, after, t.deaths.Describe(w.seed))
	case t.landed != "":
		return fmt.Sprintf("still in %s %s", t.landed, after)
	}
	last := "no settle"
	if n > 0 && len(t.deliveries[n-1].settles) > 0 {
		s := t.deliveries[n-1].settles
		last = s[len(s)-1]
	}
	return fmt.Sprintf("in no queue %s: lost (its last settle: %s; a nack goes where email-queue's dead-letter arguments send it)", after, last)
}

// dead reports whether t was found in email-dlq, where a nack from
// email-queue put it (x-death's most recent entry) through email-dlx:
// the broker republishes a dead-lettered message to the queue's
// x-dead-letter-exchange, so a basic.get names that exchange. (x-death's
// own "exchange" is where the message was published before, "" here.)
func (w *worker) dead(t *task) bool {
	return w.rejected(t) && t.landed == notify.DLQ && t.via == w.n.DLX
}

// rejected reports whether x-death's most recent entry is a reject from
// email-queue.
func (w *worker) rejected(t *task) bool {
	return len(t.deaths) > 0 && t.deaths[0].Queue == w.n.EmailQueue && t.deaths[0].Reason == "rejected"
}

// exchangeName shows an exchange name, the default exchange as such.
func exchangeName(x string) string {
	if x == "" {
		return `the default exchange ("")`
	}
	return x
}

// wantFate is where email id should end.
func (w *worker) wantFate(id string) string {
	if f := w.sc.fails[id]; f < w.sc.policy.Attempts {
		return fmt.Sprintf("sent on attempt %d", f+1)
	}
	return fmt.Sprintf("in %s after %d attempts, dead-lettered from %s (rejected) through %s", notify.DLQ, w.sc.policy.Attempts, notify.EmailQueue, notify.DLX)
}

// The checker's first policy is the seed's as its code runs: Q14 and Q15
// show the first retry waits 30 s (getRetryDelay after retries++), then
// 1 min, 2 min, 5 min, and the fifth failure is the last.
func TestTheDocumentsPolicyIsTheSeeds(t *testing.T) {
	p := scenarios[0].policy
	var waits []time.Duration
	for retry := 1; retry < p.Attempts; retry++ {
		waits = append(waits, p.Delay(retry)*200)
	}
	if want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}; fmt.Sprint(waits) != fmt.Sprint(want) || p.Attempts != 5 {
		t.Errorf("the document's policy waits %v over %d attempts; the seed's code waits %v over 5", waits, p.Attempts, want)
	}
}

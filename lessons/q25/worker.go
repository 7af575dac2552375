package q25

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/lessons/q19"
	"github.com/queuelab/qlab/rabbit"
)

// delivery is one delivery as the worker saw it.
type delivery struct {
	task     string
	n        int           // the task's delivery number, from 1
	at       time.Duration // lesson time its attempt started, from the part's start
	end      time.Duration // lesson time it was settled
	count    int           // the x-delivery-count it carried (0: none)
	acquired int           // the x-acquired-count it carried (0: none)
	err      error
	settle   Settle // how a failure went back ("" when acked)
}

// job is one part's load on one quorum queue with delayed retry.
type job struct {
	queue     string // seed name
	retryType string
	lo, hi    time.Duration // x-delayed-retry-min and -max, lesson time
	tasks     []string
	settle    func(task string) Settle
	fails     func(task string, n int, at time.Duration) error
	// guard, when > 0, is how many deliveries of one task the lab takes
	// before it acks it and reports it dropped: a nack loop would never
	// end on its own.
	guard int
	// look, when > 0, is how long after the look-th first failure to look
	// where the failed messages wait.
	look    time.Duration
	lookFor int
}

// look is where the failed messages were at one moment, measured.
type look struct {
	at      time.Duration
	waiting int // tasks whose last attempt failed and that are not back yet
	// due is how many of those the broker may have handed out again by
	// the time the ready count came back: their delay had run out. On a
	// quiet machine none; with both cores busy the first reject can land
	// more than its 2 s before the look (stop 38's CI).
	due int
	// fresh is how many tasks the worker had not been handed yet when it
	// looked: they may be ready too (DH, published right behind D5).
	fresh int
	held  int // deliveries of failed tasks the worker held unsettled: prefetch slots they take
	ready int // the queue's ready count (queue.declare-ok)
}

// outcome is what one job measured.
type outcome struct {
	rows    []delivery
	look    look
	deaths  map[string]string // task → the x-death reason it reached the DLQ with
	version string            // the broker's, as it announced itself
}

// worker runs one job: the consumer, the DLQ watcher and the accounting.
type worker struct {
	env   *lesson.Env
	s     *rabbit.Session // screens what the worker is handed (Screen)
	j     job
	clock lab.Clock
	start time.Duration
	// version is the broker's: where a message handed back goes depends
	// on it (rabbit.RequeuePlace).
	version string

	handler  sync.WaitGroup
	consumed chan struct{} // closed when the consumer's deliveries end

	mu      sync.Mutex
	rows    []delivery
	n       map[string]int
	failed  map[string]bool          // the task's last attempt failed and it is not back yet
	dueAt   map[string]time.Duration // the earliest the broker may hand a failed task out again
	inHand  map[string]int           // deliveries of the task handed over and not settled yet
	settled map[string]bool
	firsts  int           // tasks whose first attempt failed
	lookNow chan struct{} // closed at the lookFor-th first failure
	deaths  map[string]string
	done    chan struct{} // closed when every task is settled
}

// runJob declares j's queue (and the DLQ) on a session of its own,
// publishes j's tasks publishTime apart, works them at prefetch Slots, a
// goroutine per delivery as seed 003's amqplib callback does, and
// returns once every task is acked, dead-lettered or given up by the
// guard. The session's queues are deleted however it ends.
func runJob(ctx context.Context, env *lesson.Env, j job) (outcome, error) {
	s, err := rabbitenv.Session(ctx, env)
	if err != nil {
		return outcome{}, err
	}
	defer rabbitenv.CloseSession(ctx, env, s)
	clock := env.Stream.Clock()
	if err := s.Topo().DeclareArgs(ctx, DLQ, nil); err != nil {
		return outcome{}, err
	}
	args := Arguments(j.retryType, clock.Real(j.lo), clock.Real(j.hi), DeliveryLimit, s.Names.Of(DLQ))
	if err := s.Topo().DeclareArgs(ctx, j.queue, args); err != nil {
		return outcome{}, fmt.Errorf("declaring %s with delayed retry: %w", s.Names.Of(j.queue), err)
	}
	conn, err := s.Dial(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer conn.Close()
	w := &worker{env: env, s: s, j: j, clock: clock, version: rabbit.ServerVersion(s.Connection()),
		n: map[string]int{}, failed: map[string]bool{}, dueAt: map[string]time.Duration{},
		inHand:  map[string]int{},
		settled: map[string]bool{}, deaths: map[string]string{}, done: make(chan struct{}),
		consumed: make(chan struct{}), lookNow: make(chan struct{})}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := w.consume(ctx, conn, s.Names.Of(j.queue)); err != nil {
		return outcome{}, err
	}
	if err := w.watchDLQ(ctx, conn, s.Names.Of(DLQ)); err != nil {
		return outcome{}, err
	}
	pub, err := s.Publisher(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer pub.Close()
	w.start = clock.Elapsed()
	looked := w.lookLater(ctx, s)
	if err := w.publish(ctx, pub); err != nil {
		return outcome{}, err
	}
	err = w.wait(ctx)
	stop() // cancels the consumer: its deliveries end, then no handler starts
	select {
	case <-w.consumed:
	case <-time.After(5 * time.Second): // a broker that does not answer the cancel
		return outcome{}, errors.Join(err, fmt.Errorf("%s: the consumer did not stop", w.j.queue))
	}
	w.handler.Wait()
	out := outcome{look: <-looked, version: w.version}
	w.mu.Lock()
	out.rows, out.deaths = append([]delivery(nil), w.rows...), w.deaths
	w.mu.Unlock()
	return out, err
}

// publish sends the job's tasks publishTime apart, waiting for their
// confirms only after the last: a quorum queue confirms once a majority
// has written the message, which on a loaded machine takes long enough
// to spread the load out if each waited for its own.
func (w *worker) publish(ctx context.Context, pub *rabbit.Publisher) error {
	var confirms []*amqp.DeferredConfirmation
	for i, task := range w.j.tasks {
		if i > 0 {
			if err := w.clock.Wait(ctx, q19.PublishTime); err != nil {
				return err
			}
		}
		w.env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: w.j.queue, Actor: "Minute-Scheduler"})
		dc, err := pub.PublishAsync(ctx, w.j.queue, task, nil)
		if err != nil {
			return err
		}
		confirms = append(confirms, dc)
	}
	for _, dc := range confirms {
		if err := rabbit.WaitConfirm(ctx, dc); err != nil {
			return err
		}
	}
	return nil
}

// jobBound bounds one job in real time: its lesson-time schedule at the
// run's speed, and room for a loaded machine.
func (w *worker) jobBound() time.Duration {
	return w.clock.Real(2*time.Minute) + 30*time.Second
}

// wait returns once every task is settled, or with an error when the
// bound passes first.
func (w *worker) wait(ctx context.Context) error {
	bound := time.NewTimer(w.jobBound())
	defer bound.Stop()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-bound.C:
		return fmt.Errorf("%s: not every message came back within %v: the broker held one "+
			"longer than its delayed retry allows", w.j.queue, w.jobBound())
	}
}

// consume starts the worker on queue at prefetch Slots.
func (w *worker) consume(ctx context.Context, conn *amqp.Connection, queue string) error {
	_, deliveries, err := consumeOn(ctx, conn, queue, "Worker", Slots)
	if err != nil {
		return err
	}
	go func() {
		defer close(w.consumed)
		for d := range deliveries {
			if !w.s.Guest().Screen(ctx, w.j.queue, d) {
				continue // not a message of the run: moved to its hold queue
			}
			w.hold(d.MessageId, 1)
			w.handler.Add(1)
			go w.handle(ctx, d) // the seed's callback is async: up to Slots at once
		}
	}()
	return nil
}

// handle is one delivery: an attempt, then an ack, or the failure handed
// back to the broker as the job says.
func (w *worker) handle(ctx context.Context, d amqp.Delivery) {
	defer w.handler.Done()
	task, count := d.MessageId, headerInt(d.Headers, "x-delivery-count")
	row := delivery{task: task, at: w.clock.Elapsed() - w.start, count: count,
		acquired: headerInt(d.Headers, "x-acquired-count")}
	w.mu.Lock()
	w.n[task]++
	row.n = w.n[task]
	w.failed[task] = false
	w.mu.Unlock()
	e := lab.Event{Task: task, Queue: w.j.queue, Actor: "Worker", Attempt: row.n}
	row.err = w.env.Stream.Attempt(e, func() error {
		if err := w.clock.Wait(ctx, q19.SendTime); err != nil {
			return err
		}
		return w.j.fails(task, row.n, row.at)
	})
	row.end = w.clock.Elapsed() - w.start // before the settle leaves: a wait is timed from here
	switch {
	case row.err == nil:
		_ = d.Ack(false) // multiple
		w.hold(task, -1)
		w.settle(task)
	case w.j.guard > 0 && row.n >= w.j.guard:
		w.env.Stream.Emit(lab.Event{Kind: lab.Dropped, Task: task, Queue: w.j.queue, Actor: "lab",
			Note: fmt.Sprintf("the lab's guard: %d deliveries and x-delivery-count still %d; "+
				"a nack never counts, so the broker would hand it back for ever", row.n, count)})
		_ = d.Ack(false) // multiple
		w.hold(task, -1)
		w.settle(task)
	default:
		row.settle = w.j.settle(task)
		w.handBack(d, row.settle, count)
	}
	w.mu.Lock()
	w.rows = append(w.rows, row)
	w.mu.Unlock()
}

// handBack returns a failed delivery to the broker with s, saying first
// what the broker will do with it: hold it (delayed retry), or
// dead-letter it past the delivery limit.
func (w *worker) handBack(d amqp.Delivery, s Settle, count int) {
	task, after := d.MessageId, count
	if s.Counts() {
		after++
	}
	var wait time.Duration // past the limit the broker dead-letters it at once
	if after <= DeliveryLimit {
		wait = BrokerDelay(w.j.retryType, s, after, w.j.lo, w.j.hi)
	}
	w.mu.Lock()
	w.failed[task] = true
	// The broker's timer starts when the settle reaches it, after now,
	// and counts whole real milliseconds: it may run out one sooner.
	w.dueAt[task] = w.clock.Elapsed() - w.start + wait - w.clock.Lesson(time.Millisecond)
	first := w.n[task] == 1
	w.mu.Unlock()
	if after <= DeliveryLimit { // past it, the DLQ watcher reports what the broker did
		// No Via: there is no wait queue, the queue itself holds it.
		w.env.Stream.Emit(lab.Event{Kind: lab.Scheduled, Task: task, Queue: w.j.queue, To: w.j.queue,
			Actor: "broker", DelayMs: wait.Milliseconds(),
			Note: fmt.Sprintf("basic.%s, requeue (x-delivery-count %d): %s", s, after, backPlace(wait, w.version))})
	}
	switch s {
	case Nack:
		_ = d.Nack(false, true) // multiple, requeue
	default:
		_ = d.Reject(true) // requeue
	}
	w.hold(task, -1)
	// The look is timed from here: the lookFor-th first failure's
	// hand-back is written and its slot free (counted before it, a
	// goroutine stalled on a loaded machine was still "held" 50 ms later).
	w.mu.Lock()
	if first {
		if w.firsts++; w.firsts == w.j.lookFor {
			close(w.lookNow)
		}
	}
	w.mu.Unlock()
}

// hold counts a delivery of task handed over (+1) or settled (-1).
func (w *worker) hold(task string, by int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inHand[task] += by
}

// settle marks task settled; the last one ends the job.
func (w *worker) settle(task string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settled[task] {
		return
	}
	w.settled[task] = true
	w.failed[task] = false
	if len(w.settled) == len(w.j.tasks) {
		close(w.done)
	}
}

// watchDLQ reports each message the broker dead-letters past the
// delivery limit, with the reason its x-death gives.
func (w *worker) watchDLQ(ctx context.Context, conn *amqp.Connection, dlq string) error {
	_, deaths, err := consumeOn(ctx, conn, dlq, "DLQ-Watcher", Slots)
	if err != nil {
		return err
	}
	go func() {
		for d := range deaths {
			if !w.s.Guest().Screen(ctx, DLQ, d) {
				continue
			}
			reason := deathReason(d.Headers)
			w.env.Stream.Emit(lab.Event{Kind: lab.DeadLettered, Task: d.MessageId, Queue: w.j.queue, To: DLQ,
				Actor: "broker", Note: fmt.Sprintf("past x-delivery-limit %d (x-death reason %s)",
					DeliveryLimit, reason)})
			_ = d.Ack(false) // multiple
			w.mu.Lock()
			w.deaths[d.MessageId] = reason
			w.mu.Unlock()
			w.settle(d.MessageId)
		}
	}()
	return nil
}

// lookLater looks, j.look after the j.lookFor-th task's first failure
// was handed back, where the failed messages are: not in the worker's
// hands (held), not ready in the queue.
func (w *worker) lookLater(ctx context.Context, s *rabbit.Session) <-chan look {
	out := make(chan look, 1)
	if w.j.lookFor <= 0 {
		out <- look{at: -1}
		return out
	}
	go func() {
		l := look{at: -1}
		defer func() { out <- l }()
		select {
		case <-w.lookNow:
		case <-ctx.Done():
			return
		}
		if w.clock.Wait(ctx, w.j.look) != nil {
			return
		}
		l.at = w.clock.Elapsed() - w.start
		w.mu.Lock()
		for task, f := range w.failed { // every task that has failed
			l.held += w.inHand[task] // the healthy one's attempt is none of these
			if f {
				l.waiting++
			}
		}
		for _, task := range w.j.tasks {
			if w.n[task] == 0 && w.inHand[task] == 0 {
				l.fresh++
			}
		}
		w.mu.Unlock()
		ready, err := s.Topo().Depth(ctx, w.j.queue)
		if err != nil {
			l.ready = -1
		} else {
			l.ready = ready
		}
		l.due = w.dueBy(w.clock.Elapsed() - w.start)
	}()
	return out
}

// dueBy counts the unsettled tasks handed back whose latest delay may
// have run out by at: the broker may have handed them out again, so
// they may be ready, held or failed anew. Every other one handed back
// is still held by the broker, in neither count.
func (w *worker) dueBy(at time.Duration) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for task, due := range w.dueAt {
		if !w.settled[task] && due <= at {
			n++
		}
	}
	return n
}

// headerInt reads an integer header the broker set, 0 when absent.
func headerInt(h amqp.Table, key string) int {
	switch v := h[key].(type) {
	case int64:
		return int(v)
	case int32:
		return int(v)
	case int:
		return v
	}
	return 0
}

// deathReason is the reason of the latest x-death entry, "-" if none.
func deathReason(h amqp.Table) string {
	if ds := rabbit.ReadDeaths(h); len(ds) > 0 && ds[0].Reason != "" {
		return ds[0].Reason
	}
	return "-"
}

// errFailing is the failure of part (b) and (c)'s messages: the mail API
// rate-limits them every time.
var errFailing = errors.New("rate limited (429), every time")

package q15

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

// q15Book is what one run's worker did, as it did it: which tasks it acked
// for good or nacked, how often it settled a delivery twice, what the
// broker answered, and how many deliveries came back redelivered.
type q15Book struct {
	mu           sync.Mutex
	changed      chan struct{} // a non-blocking signal on every change
	done         map[string]int
	nacks        map[string]q15Nack
	again        []string // the tasks settled a second time, in order
	closes       []string // the broker's channel.close replies and lost connections
	working      bool     // the worker holds a delivery it has not finished with
	failure      error    // why the worker stopped before its time
	redeliveries []string // the tasks handed out again, in order
}

// q15Nack is the last nack of a task: at which attempt and retries count.
type q15Nack struct{ attempt, retries int }

func newQ15Book() *q15Book {
	return &q15Book{changed: make(chan struct{}, 1), done: map[string]int{}, nacks: map[string]q15Nack{}}
}

func (b *q15Book) update(f func()) {
	b.mu.Lock()
	f()
	b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

func (b *q15Book) succeeded(task string) { b.update(func() { b.done[task]++ }) }
func (b *q15Book) nacked(task string, attempt, retries int) {
	b.update(func() { b.nacks[task] = q15Nack{attempt, retries} })
}
func (b *q15Book) settledAgain(task string) { b.update(func() { b.again = append(b.again, task) }) }
func (b *q15Book) redelivered(task string) {
	b.update(func() { b.redeliveries = append(b.redeliveries, task) })
}
func (b *q15Book) fail(err error) { b.update(func() { b.failure = err }) }
func (b *q15Book) busy()          { b.update(func() { b.working = true }) }
func (b *q15Book) idle()          { b.update(func() { b.working = false }) }
func (b *q15Book) channelClosed(err *amqp.Error) {
	b.update(func() {
		b.closes, b.working = append(b.closes, fmt.Sprintf("channel: %d %s", err.Code, err.Reason)), false
	})
}

// connectionClosed records a worker connection that closed under it:
// err is amqp091-go's reason (nil for a clean close).
func (b *q15Book) connectionClosed(err *amqp.Error) {
	reason := "closed"
	if err != nil {
		reason = fmt.Sprintf("%d %s", err.Code, err.Reason)
	}
	b.update(func() { b.closes = append(b.closes, "connection: "+reason) })
}

// twice lists the tasks acked after more than one successful attempt.
// The caller holds b.mu.
func (b *q15Book) twice() []string {
	var out []string
	for _, t := range slices.Sorted(maps.Keys(b.done)) {
		if b.done[t] > 1 {
			out = append(out, t)
		}
	}
	return out
}

// lastAgain is the task settled twice most recently, "" if none.
func (b *q15Book) lastAgain() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.again) == 0 {
		return ""
	}
	return b.again[len(b.again)-1]
}

// pending lists the tasks neither acked after success nor nacked, and
// "(the worker)" while the worker is busy with a delivery.
func (b *q15Book) pending(tasks []string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	if b.working {
		out = append(out, "(the worker)")
	}
	for _, t := range tasks {
		_, nacked := b.nacks[t]
		if b.done[t] == 0 && !nacked {
			out = append(out, t)
		}
	}
	return out
}

// waitSettled waits until every task was acked after success or nacked
// and the worker has seen the broker's answer to its last settle, at most
// bound of real time while the run's clock runs (a pause, the TUI's space
// bar, stretches it).
func (b *q15Book) waitSettled(ctx context.Context, clock lab.Clock, tasks []string, bound time.Duration) error {
	expired := make(chan struct{})
	timeout := clock.AfterFunc(clock.Lesson(bound), func() { close(expired) })
	defer timeout.Stop()
	for {
		b.mu.Lock()
		failure := b.failure
		b.mu.Unlock()
		if failure != nil {
			return failure
		}
		left := b.pending(tasks)
		if len(left) == 0 {
			return nil
		}
		select {
		case <-b.changed:
		case <-expired:
			return fmt.Errorf("q15: %s not settled within %v", strings.Join(left, ", "), bound)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// q15Bound bounds one run in real time: every task through every retry
// delay one after another (one retry queue can hold a short expiration
// behind a long one), every attempt's work, a few seconds for the broker,
// and as long as the session waits for a broker that went away (its
// GiveUpAfter): a restart the session rides out must not end the run. A
// busy machine's restart took over 10 s (the fault suite's restart/q15,
// load average 17 on 2 cores).
func q15Bound(env *lesson.Env, tasks int) time.Duration {
	var delays time.Duration
	for r := 1; r < notify.MaxRetries; r++ {
		delays += q15Delay(r)
	}
	lessonTime := time.Duration(tasks) * (delays + time.Duration(notify.MaxRetries)*env.Plan.Work)
	return env.Stream.Clock().Real(lessonTime) + 10*time.Second + cmp.Or(env.GiveUpAfter, rabbit.DefaultGiveUpAfter)
}

// q15Outcome is what one run measured.
type q15Outcome struct {
	run     q15Run
	version string // the broker's
	names   rabbit.Names
	args    amqp.Table // email-queue's arguments, under the seed's names
	book    *q15Book
	landed  []q15Landed
	held    time.Duration // how long run 1 left its nacked messages alone before looking
}

// q15Landed is one nacked message, found where the broker put it.
type q15Landed struct {
	task    string
	queue   string // seed name of the queue it was found in
	deaths  rabbit.Deaths
	retries int // the body's retries
	attempt int
}

// land finds every nacked task's message in email-dlq or
// email-retry-queue (basic.get, left in place) and reports its fate from
// where it was found. Run 1 first waits the document's longest retry
// delay: a message that was going to leave the retry queue would have.
func (o *q15Outcome) land(ctx context.Context, env *lesson.Env, s *rabbit.Session, tasks []string) error {
	if o.run.diagram {
		o.held = q15Delay(notify.MaxRetries - 1)
		if err := env.Stream.Clock().Wait(ctx, o.held); err != nil {
			return err
		}
	}
	nacked := o.nackedTasks(tasks)
	found, err := q15Find(ctx, s, nacked)
	if err != nil {
		return err
	}
	for _, task := range nacked {
		o.report(env, task, found[task])
	}
	return nil
}

// nackedTasks lists the tasks the worker nacked, in the plan's order.
func (o *q15Outcome) nackedTasks(tasks []string) []string {
	o.book.mu.Lock()
	defer o.book.mu.Unlock()
	var out []string
	for _, t := range tasks {
		if _, ok := o.book.nacks[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

// q15Find peeks at email-dlq and email-retry-queue (Peek: the run's
// messages only, left in place) until each of the nacked tasks is found
// in one of them, or q15Landing has passed. When the worker's last settle
// was answered the broker has taken the nack, but dead-lettering is
// asynchronous: email-queue hands the message on to the exchange and the
// target queue takes it later, later still on a loaded machine. A task
// not found within the bound is reported lost.
func q15Find(ctx context.Context, s *rabbit.Session, nacked []string) (map[string]rabbit.Delivery, error) {
	var found map[string]rabbit.Delivery
	_, err := rabbit.PollUntil(ctx, 20*time.Millisecond, q15Landing, func() (bool, error) {
		found = map[string]rabbit.Delivery{}
		for _, q := range []string{notify.DLQ, notify.RetryQueue} {
			ds, err := s.Guest().Peek(ctx, q, len(nacked)+1)
			if err != nil {
				return false, err
			}
			for _, d := range ds {
				found[d.Task] = d
			}
		}
		return q15AllFound(found, nacked), nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// q15Landing bounds the wait for a nacked message to reach its queue: a
// dead-letter takes milliseconds, so only a broken route waits this long.
const q15Landing = 30 * time.Second

// q15AllFound reports whether found holds every task of tasks.
func q15AllFound(found map[string]rabbit.Delivery, tasks []string) bool {
	for _, t := range tasks {
		if _, ok := found[t]; !ok {
			return false
		}
	}
	return true
}

// report emits the fate of nacked task from where its message was found:
// dead-lettered into email-dlq, stranded in email-retry-queue (which
// nothing consumes or expires), or lost if no queue holds it.
func (o *q15Outcome) report(env *lesson.Env, task string, d rabbit.Delivery) {
	o.book.mu.Lock()
	n := o.book.nacks[task]
	o.book.mu.Unlock()
	e := lab.Event{Task: task, Queue: notify.EmailQueue, Actor: "Broker", Attempt: n.attempt}
	if d.Task == "" {
		e.Kind, e.Note = lab.Lost, "nacked, but neither email-dlq nor email-retry-queue holds it"
		env.Stream.Emit(e)
		return
	}
	l := q15Landed{task: task, queue: d.Queue, deaths: d.Deaths, attempt: n.attempt, retries: n.retries}
	if job, err := notify.DecodeJob(d.Body); err == nil {
		l.retries = job.Retries
	}
	o.landed = append(o.landed, l)
	e.Kind, e.To = lab.DeadLettered, d.Queue
	e.Note = "found there with basic.get (left in place); x-death: " + d.Deaths.Describe(o.names.Seed)
	if d.Queue == notify.RetryQueue { // dead-lettered, but into a queue that is no DLQ and never lets it go
		e.Kind = lab.Stranded
		e.Note = fmt.Sprintf("nacked at attempt %d and dead-lettered there by email-dlx; still there %v later: no consumer, "+
			"no x-message-ttl on the queue and no expiration on the message, so it never returns; x-death: %s",
			n.attempt, o.held, d.Deaths.Describe(o.names.Seed))
	}
	env.Stream.Emit(e)
}

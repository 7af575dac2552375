package inmem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
)

// Flow is the in-memory mechanism of the flow seam: every queue of the
// topology is a channel, every consumer a goroutine, and a retry through a
// wait queue is a time.AfterFunc timer that holds the task in this
// process's memory for the wait queue's TTL. Nothing survives Interrupt.
type Flow struct {
	sys  *System
	room int

	mu       sync.Mutex
	topo     flow.Topology
	queues   map[string]*Queue
	consumed map[string]bool
	requeued map[*Task]bool // put straight back: the next delivery repeats the attempt
	delays   map[string]*delayQueue
	err      error // the first decision the topology could not carry out
}

// NewFlow returns an in-memory flow reporting to stream. Each queue has
// room for room tasks; a put never blocks below that, so make it larger
// than the most tasks any one queue can hold at once.
func NewFlow(ctx context.Context, stream *lab.Stream, room int) *Flow {
	return &Flow{sys: New(ctx, stream, lab.Plan{}), room: room, queues: map[string]*Queue{}, consumed: map[string]bool{}, requeued: map[*Task]bool{}, delays: map[string]*delayQueue{}}
}

// Kind is lab.InMem.
func (f *Flow) Kind() lab.Backend { return lab.InMem }

// Features: exact lesson time under a fake clock; a crash loses what
// memory held; a waiting task sits on a timer, in no queue.
func (f *Flow) Features() flow.Features { return flow.Features{ExactTime: true} }

// System returns the system the flow runs on.
func (f *Flow) System() *System { return f.sys }

// Declare records t. Queues are made on first use: a consumed queue as a
// work queue, a delay queue as a FIFO that expires only its head (see
// delayQueue), any other as a holding queue (a DLQ nobody consumes).
func (f *Flow) Declare(_ context.Context, t flow.Topology) error {
	if err := t.Check(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topo = t
	return nil
}

// Consume starts a worker goroutine named c.Actor on c.Queue. A queue
// that so far only held tasks (a DLQ the run parked them in) becomes a
// work queue: its tasks are handed to the worker, as a replay on the
// broker would. Each delivery counts one more attempt on the task (a
// requeued one repeats its attempt, as on the broker), then c.Handle
// decides. With a Prefetch above 1 the worker holds up to that many
// tasks taken off the queue, as a broker's consumer does.
func (f *Flow) Consume(_ context.Context, c flow.Consumer) error {
	q, err := f.consume(c)
	if err != nil {
		return err
	}
	handle := func(t *Task) {
		f.apply(c, q, t, c.Handle(f.sys.Context(), f.deliver(q, t)))
	}
	if c.Window(1) == 1 {
		f.sys.Worker(c.Actor, q, handle)
		return nil
	}
	f.sys.prefetch(q, c.Window(1), func(in <-chan *Task, settled func(*Task)) {
		for t := range in {
			if f.sys.ctx.Err() != nil {
				return
			}
			handle(t)
			settled(t)
		}
	})
	return nil
}

// ConsumeBatch starts a batch worker on c.Queue: it holds up to
// max(c.Prefetch, b.Size) tasks and hands b.Handle up to b.Size of them,
// or those that came within b.Wait of lesson time of the first; each
// decision is carried out on its own task.
func (f *Flow) ConsumeBatch(_ context.Context, c flow.Consumer, b flow.Batch) error {
	if err := b.Check(); err != nil {
		return err
	}
	q, err := f.consume(c)
	if err != nil {
		return err
	}
	wait := f.sys.clock.Real(b.Wait)
	f.sys.prefetch(q, b.Window(c), func(in <-chan *Task, settled func(*Task)) {
		flow.Gather(f.sys.ctx, in, b.Size, wait, func(ts []*Task) {
			// Timers that fire at one instant (a batch retried through a wait
			// queue) race to put their tasks back: one order, by id, keeps the
			// run reproducible. RabbitMQ's wait queue keeps them in order.
			slices.SortStableFunc(ts, func(a, b *Task) int { return strings.Compare(a.ID, b.ID) })
			ds := make([]*flow.Delivery, len(ts))
			for i, t := range ts {
				ds[i] = f.deliver(q, t)
			}
			for i, dec := range b.Decide(f.sys.Context(), ds) {
				f.apply(c, q, ts[i], dec)
				settled(ts[i])
			}
		})
	})
	return nil
}

// consume marks c's queue consumed and returns it, made a work queue.
func (f *Flow) consume(c flow.Consumer) (*Queue, error) {
	if _, ok := f.topology().Queue(c.Queue); !ok {
		return nil, fmt.Errorf("inmem: consuming %s: %w", c.Queue, flow.ErrNoRoute)
	}
	f.mu.Lock()
	f.consumed[c.Queue] = true
	f.mu.Unlock()
	q := f.queue(c.Queue)
	q.release()
	return q, nil
}

// deliver counts one more attempt on t (a requeued task repeats its
// attempt) and returns the delivery a handler sees.
func (f *Flow) deliver(q *Queue, t *Task) *flow.Delivery {
	if !f.takeRequeued(t) {
		t.Attempt++
	}
	return &flow.Delivery{Task: t.ID, Queue: q.name, Attempt: t.Attempt, Body: t.Body}
}

// takeRequeued reports whether t was requeued, and forgets it.
func (f *Flow) takeRequeued(t *Task) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	was := f.requeued[t]
	delete(f.requeued, t)
	return was
}

// apply carries out decision dec on t, taken from q by consumer c. It
// refuses what the broker could not do either (a broker-counted retry
// into a wait queue q does not dead-letter to), so a lesson that runs here
// runs on RabbitMQ too.
func (f *Flow) apply(c flow.Consumer, q *Queue, t *Task, dec flow.Decision) {
	topo, actor := f.topology(), c.Actor
	switch dec.Action {
	case flow.ActAck:
	case flow.ActRetry:
		via, ok := topo.Queue(dec.To)
		switch {
		case !ok || (c.RetryHeader == "" && topo.DeadLetterTarget(q.name) != via.Name):
			f.fail(actor, q, t, fmt.Errorf("%s does not dead-letter to %s; count attempts in a header to republish there: %w", q.name, dec.To, flow.ErrNoRoute))
		case flow.CheckDelay(via, dec, c.RetryHeader) != nil:
			f.fail(actor, q, t, flow.CheckDelay(via, dec, c.RetryHeader))
		case via.Role == flow.Delay:
			f.retryAfter(actor, q, t, via.Name, dec.Delay)
		case via.Role == flow.Wait:
			// The lesson's wait queue is a timer here: the task waits in memory.
			to := f.queue(topo.Settle(via.Name))
			f.sys.schedule(lab.Event{Kind: lab.Scheduled, Task: t.ID, Queue: q.name, Via: via.Name, To: to.name, Actor: actor,
				Attempt: t.Attempt, DelayMs: via.TTL.Milliseconds(),
				Note: "in memory: a time.AfterFunc timer stands in for it"}, t, to,
				func(move func()) *time.Timer { return f.sys.clock.AfterFunc(via.TTL, move) })
		default:
			q.MoveTo(actor, t, f.queue(via.Name))
		}
	case flow.ActPark:
		if _, ok := topo.Queue(dec.To); !ok {
			f.fail(actor, q, t, fmt.Errorf("park in unknown queue %s: %w", dec.To, flow.ErrNoRoute))
			return
		}
		q.DeadLetter(actor, t, f.queue(dec.To), dec.Reason)
	case flow.ActRequeue:
		f.mu.Lock()
		f.requeued[t] = true
		f.mu.Unlock()
		q.Requeue(actor, t)
	case flow.ActDrop:
		f.sys.Drop(actor, t, q.name, dec.Reason)
	}
}

// retryAfter puts t in delay queue via with its own expiration: the
// message waits its turn at the head, as on the broker.
func (f *Flow) retryAfter(actor string, q *Queue, t *Task, via string, delay time.Duration) {
	dq := f.delayQueue(via)
	f.sys.emit(lab.Event{Kind: lab.Scheduled, Task: t.ID, Queue: q.name, Via: via, To: dq.to.name, Actor: actor,
		Attempt: t.Attempt, DelayMs: delay.Milliseconds(),
		Note: fmt.Sprintf("%s %s: in memory a FIFO delay queue that expires only its head, as RabbitMQ does", flow.ExpirationNote, delay)})
	dq.push(t, delay)
}

// delayQueue returns delay queue name, making it on first use.
func (f *Flow) delayQueue(name string) *delayQueue {
	to := f.queue(f.topology().Settle(name))
	f.mu.Lock()
	defer f.mu.Unlock()
	if dq, ok := f.delays[name]; ok {
		return dq
	}
	dq := newDelayQueue(f.sys, name, f.room, to)
	f.delays[name], f.queues[name] = dq, dq.held
	return dq
}

// stopDelays stops the delay queues' timers once the run is over.
func (f *Flow) stopDelays() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, dq := range f.delays {
		dq.stop()
	}
}

// fail reports a decision the topology cannot carry out: the task is lost
// (the stream says why) and Wait returns the error.
func (f *Flow) fail(actor string, q *Queue, t *Task, err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	f.sys.emit(lab.Event{Kind: lab.Lost, Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt, Note: err.Error()})
}

// Publish creates task on queue, at once: memory needs no confirm.
func (f *Flow) Publish(_ context.Context, actor, queue, task string) error {
	if _, ok := f.topology().Queue(queue); !ok {
		return fmt.Errorf("inmem: publishing to %s: %w", queue, flow.ErrNoRoute)
	}
	f.queue(queue).Enqueue(actor, task)
	return nil
}

// PublishTo routes task through exchange's bindings in the topology, as a
// broker's exchange would, and puts one copy on each queue it reaches.
func (f *Flow) PublishTo(_ context.Context, actor, exchange, key, task string) error {
	topo := f.topology()
	if !topo.HasExchange(exchange) {
		return fmt.Errorf("inmem: publishing to exchange %s: %w", exchange, flow.ErrNoRoute)
	}
	routes := topo.Route(exchange, key)
	if len(routes) == 0 {
		for _, e := range flow.Unroutable(actor, exchange, key, task, "in memory nothing holds it") {
			f.sys.emit(e)
		}
		return fmt.Errorf("inmem: %s to exchange %s, key %q: %w", task, exchange, key, flow.ErrUnroutable)
	}
	for _, name := range routes {
		f.sys.emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: name, Actor: actor, Note: flow.RoutedNote(exchange, key)})
		f.putRouted(actor, name, &Task{ID: task})
	}
	return nil
}

// putRouted puts t, routed to queue name, there; a wait queue holds it
// for its TTL (a timer here) and then hands it on along its dead-letter
// route, as the broker does with a message published into one (seed 004's
// retry exchange).
func (f *Flow) putRouted(actor, name string, t *Task) {
	topo := f.topology()
	wq, _ := topo.Queue(name)
	if wq.Role != flow.Wait {
		f.queue(name).put(t)
		return
	}
	to := f.queue(topo.Settle(name))
	f.sys.schedule(lab.Event{Kind: lab.Scheduled, Task: t.ID, Queue: name, Via: name, To: to.name,
		Actor: actor, DelayMs: wq.TTL.Milliseconds(), Note: "in memory: a time.AfterFunc timer stands in for its TTL"},
		t, to, func(move func()) *time.Timer { return f.sys.clock.AfterFunc(wq.TTL, move) })
}

// Wait blocks until no task is queued, on a timer or being handled in a
// consumed queue (System.Wait), then stops the workers.
func (f *Flow) Wait(ctx context.Context) error {
	err := f.sys.Wait(ctx)
	f.stopDelays()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		err = f.err
	}
	return err
}

// Depth is how many tasks wait in queue; a wait queue is always 0, since
// a waiting task is on a timer, while a delay queue holds its tasks.
func (f *Flow) Depth(_ context.Context, queue string) (int, error) {
	f.mu.Lock()
	q := f.queues[queue]
	f.mu.Unlock()
	if q == nil {
		return 0, nil
	}
	return q.Len(), nil
}

// Peek reads up to n tasks at the head of holding queue queue and puts
// them back in the same order.
func (f *Flow) Peek(_ context.Context, queue string, n int) ([]flow.Delivery, error) {
	f.mu.Lock()
	q, consumed := f.queues[queue], f.consumed[queue]
	f.mu.Unlock()
	if consumed {
		return nil, fmt.Errorf("inmem: peeking at %s: it has a consumer", queue)
	}
	if q == nil {
		return nil, nil
	}
	return q.peek(n), nil
}

// peek drains holding queue q and refills it, reporting its first n
// tasks. Only a queue without a worker can be read this way.
func (q *Queue) peek(n int) []flow.Delivery {
	all := make([]*Task, 0, q.Len())
	for t, ok := q.tryTake(); ok; t, ok = q.tryTake() {
		all = append(all, t)
	}
	var out []flow.Delivery
	for _, t := range all {
		if len(out) >= n {
			break
		}
		out = append(out, flow.Delivery{Task: t.ID, Queue: q.name, Attempt: t.Attempt, Body: t.Body})
	}
	q.restore(all)
	return out
}

// Interrupt crashes the process: every task in memory is lost.
func (f *Flow) Interrupt() { f.sys.Crash("process") }

// Close stops the workers and timers. Memory holds the tasks still in it
// until the process ends; the summary reports them as they stand.
func (f *Flow) Close(context.Context) error {
	f.sys.Stop()
	f.stopDelays()
	return nil
}

func (f *Flow) topology() flow.Topology {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.topo
}

// queue returns the channel of seed queue name, making it on first use:
// a work queue if a consumer asked for it, a holding queue otherwise.
func (f *Flow) queue(name string) *Queue {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.queues[name]; ok {
		return q
	}
	var q *Queue
	if f.consumed[name] {
		q = f.sys.Queue(name, f.room)
	} else {
		q = f.sys.HoldingQueue(name, f.room)
	}
	f.queues[name] = q
	return q
}

// The optional interfaces of the flow seam the in-memory mechanism has.
var (
	_ flow.Backend     = (*Flow)(nil)
	_ flow.Inspector   = (*Flow)(nil)
	_ flow.Interrupter = (*Flow)(nil)
	_ flow.Describer   = (*Flow)(nil)
	_ flow.Batcher     = (*Flow)(nil)
)

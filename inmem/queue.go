package inmem

import (
	"sync"
	"sync/atomic"

	"github.com/queuelab/qlab/lab"
)

// chanRoom is the most room a queue's channel is given. A queue with
// room for more keeps the rest in an overflow list behind the channel,
// which grows and shrinks with what it holds: a channel's buffer is
// allocated whole when it is made, 8 bytes a task, and most of a
// lesson's queues sit nearly empty all run.
const chanRoom = 1024

// Queue is a named FIFO. Create it with System.Queue. The tasks at its
// head wait in a buffered channel, which workers receive from; past
// chanRoom tasks the rest wait in order in an overflow list, and each
// take moves the oldest of them into the channel.
type Queue struct {
	name string
	sys  *System
	ch   chan *Task
	// room is how many tasks the queue holds before a put waits.
	room int
	// over is the overflow list, nil for a queue whose channel has all
	// its room. overN counts its tasks, read without mu: while it is
	// not zero a put must join the list, never pass it on the channel.
	overN atomic.Int64
	mu    sync.Mutex
	over  *overflow
	// space wakes a put waiting for room in a full queue; waiting counts
	// such puts (both under mu).
	space   chan struct{}
	waiting int
	// hold marks a holding queue (System.HoldingQueue): tasks rest in it
	// and do not count as work in flight, until Flow.Consume gives the
	// queue a worker (see Queue.release).
	hold atomic.Bool
}

// Name returns the queue's name as it appears in events.
func (q *Queue) Name() string { return q.name }

// Len returns how many tasks are waiting in the queue.
func (q *Queue) Len() int { return len(q.ch) + int(q.overN.Load()) }

// Enqueue creates task id on this queue on behalf of actor (the producer).
func (q *Queue) Enqueue(actor string, id string) *Task {
	t := &Task{ID: id}
	q.sys.emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: q.name, Actor: actor})
	q.put(t)
	return t
}

// Receive takes the next task from the queue's channel, in order,
// blocking until there is one (a worker's <-queue); ok is false once the
// system has stopped. Each task received is reported with
// System.Handled. The queue must not be a holding queue.
func (q *Queue) Receive() (t *Task, ok bool) {
	q.mustConsume()
	return q.sys.next(q)
}

// Requeue puts t back at the tail of this same queue after a failure: the
// fast retry of lesson Q01.
func (q *Queue) Requeue(actor string, t *Task) {
	q.sys.emit(lab.Event{Kind: lab.Moved, Task: t.ID, Queue: q.name, To: q.name, Actor: actor, Attempt: t.Attempt})
	q.put(t)
}

// MoveTo moves t from this queue to queue to at once.
func (q *Queue) MoveTo(actor string, t *Task, to *Queue) {
	q.sys.emit(lab.Event{Kind: lab.Moved, Task: t.ID, Queue: q.name, To: to.name, Actor: actor, Attempt: t.Attempt})
	to.put(t)
}

// DeadLetter parks t, taken from this queue, in the dead-letter queue dlq,
// with the reason it could not be processed.
func (q *Queue) DeadLetter(actor string, t *Task, dlq *Queue, reason string) {
	q.sys.emit(lab.Event{Kind: lab.DeadLettered, Task: t.ID, Queue: q.name, To: dlq.name, Actor: actor, Attempt: t.Attempt, Note: reason})
	dlq.put(t)
}

// put counts the task as in flight, then hands it to the channel, or to
// the overflow list while that holds any task or the channel is full. The count
// comes first so the System can never look idle while a task is on its way.
// A task put on a parking queue is at rest and not counted. A put that
// finds the queue full waits for room until the system stops; then it gives
// up, because no worker will make room any more, and the task ends the run
// pending (its last event said where it was going).
func (q *Queue) put(t *Task) {
	if q.sys.dead.Load() {
		// The process has died: what it tries to put in memory now is gone
		// at once. (A put racing the crash itself ends pending, which the
		// summary still reports.)
		q.sys.emit(lab.Event{Kind: lab.Lost, Task: t.ID, Queue: q.name, Note: "the process had died"})
		return
	}
	held := q.hold.Load()
	if !held {
		q.sys.work.add()
	}
	if q.overN.Load() == 0 { // nothing overflowing that t could pass
		select {
		case q.ch <- t: // room, the common case: as cheap as a plain send
			return
		default:
		}
	}
	if q.over != nil {
		q.putOver(t, held)
		return
	}
	select {
	case q.ch <- t:
	case <-q.sys.ctx.Done():
		if !held {
			q.sys.work.done()
		}
	}
}

// putOver adds t to the overflow list of a queue with one, behind the
// tasks already in it, waiting while the queue is full as put does.
func (q *Queue) putOver(t *Task, held bool) {
	for {
		q.mu.Lock()
		if len(q.ch)+q.over.n < q.room {
			q.over.push(t)
			q.overN.Add(1)
			q.refillLocked()
			q.mu.Unlock()
			return
		}
		q.waiting++
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-q.sys.ctx.Done():
			q.mu.Lock()
			q.waiting--
			q.mu.Unlock()
			if !held {
				q.sys.work.done()
			}
			return
		}
		q.mu.Lock()
		q.waiting--
		q.mu.Unlock()
	}
}

// took is called after each receive from the channel: it moves the
// oldest overflowing tasks into the room the receive made.
func (q *Queue) took() {
	if q.overN.Load() > 0 {
		q.mu.Lock()
		q.refillLocked()
		q.mu.Unlock()
	}
}

// refillLocked moves tasks from the head of the overflow list into the
// channel while it has room, and wakes a put waiting for room. overN
// drops only once a task is in the channel, so no put can overtake it.
func (q *Queue) refillLocked() {
	moved := false
	for q.over.n > 0 {
		select {
		case q.ch <- q.over.front():
			q.over.pop()
			q.overN.Add(-1)
			moved = true
			continue
		default:
		}
		break
	}
	if moved && q.waiting > 0 {
		select {
		case q.space <- struct{}{}:
		default:
		}
	}
}

// tryTake takes the task at the head of the queue if there is one,
// without waiting.
func (q *Queue) tryTake() (*Task, bool) {
	for {
		select {
		case t := <-q.ch:
			q.took()
			return t, true
		default:
		}
		if q.overN.Load() == 0 {
			return nil, false
		}
		// A put is between its list and the channel: let it finish.
		q.mu.Lock()
		q.refillLocked()
		q.mu.Unlock()
	}
}

// restore puts tasks taken off an emptied queue back in the same order,
// without counting them again (see peek).
func (q *Queue) restore(ts []*Task) {
	for i, t := range ts {
		select {
		case q.ch <- t:
			continue
		default:
		}
		if q.over == nil {
			q.ch <- t // it held them a moment ago
			continue
		}
		q.mu.Lock()
		for _, t := range ts[i:] {
			q.over.push(t)
			q.overN.Add(1)
		}
		q.refillLocked()
		q.mu.Unlock()
		return
	}
}

// overflowBlock is how many tasks one block of an overflow list holds.
const overflowBlock = 256

// overflow is a FIFO of tasks in fixed blocks, so it grows and shrinks
// with its contents without copying them; one emptied block is kept for
// reuse, so a queue hovering around a block boundary does not allocate
// on every task.
type overflow struct {
	head, tail *block
	// hi is the head block's first task, ti the tail block's first free
	// slot; n counts all tasks.
	hi, ti, n int
	spare     *block
}

type block struct {
	tasks [overflowBlock]*Task
	next  *block
}

func (o *overflow) push(t *Task) {
	if o.tail == nil || o.ti == overflowBlock {
		b := o.spare
		o.spare = nil
		if b == nil {
			b = new(block)
		}
		if o.tail == nil {
			o.head, o.hi = b, 0
		} else {
			o.tail.next = b
		}
		o.tail, o.ti = b, 0
	}
	o.tail.tasks[o.ti] = t
	o.ti++
	o.n++
}

func (o *overflow) front() *Task { return o.head.tasks[o.hi] }

func (o *overflow) pop() {
	o.head.tasks[o.hi] = nil
	o.hi++
	o.n--
	if o.n == 0 { // the head is the tail: keep it as the spare
		o.spare, o.head, o.tail = o.head, nil, nil
		return
	}
	if o.hi == overflowBlock {
		done := o.head
		o.head, o.hi = done.next, 0
		done.next = nil
		o.spare = done
	}
}

package inmem

import (
	"sync/atomic"

	"github.com/queuelab/qlab/lab"
)

// Queue is a named FIFO on a buffered channel. Create it with System.Queue.
type Queue struct {
	name string
	sys  *System
	ch   chan *Task
	// hold marks a holding queue (System.HoldingQueue): tasks rest in it
	// and do not count as work in flight, until Flow.Consume gives the
	// queue a worker (see Queue.release).
	hold atomic.Bool
}

// Name returns the queue's name as it appears in events.
func (q *Queue) Name() string { return q.name }

// Len returns how many tasks are waiting in the queue.
func (q *Queue) Len() int { return len(q.ch) }

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

// put counts the task as in flight, then hands it to the channel. The count
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
	select {
	case q.ch <- t: // room, the common case: as cheap as a plain send
		return
	default:
	}
	select {
	case q.ch <- t:
	case <-q.sys.ctx.Done():
		if !held {
			q.sys.work.done()
		}
	}
}

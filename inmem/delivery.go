package inmem

import (
	"fmt"

	"github.com/queuelab/qlab/lab"
)

// This file holds the pieces of a delivery for lessons whose handler decides
// itself what an attempt does (an idempotency guard, say) instead of calling
// System.Attempt, and the holding queue a dead-letter queue usually is.

// HoldingQueue creates a queue where tasks rest until someone inspects them,
// like a dead-letter queue nobody consumes. Its tasks do not count as work
// in flight, so Wait returns while they sit there; Crash still reports them
// lost, because they live in memory too. No Worker may consume a holding
// queue (Worker panics): a queue with a worker is made with System.Queue.
func (s *System) HoldingQueue(name string, capacity int) *Queue {
	q := s.Queue(name, capacity)
	q.hold.Store(true)
	return q
}

// Begin starts a processing attempt of t taken from q: it counts the
// attempt and emits started. End the attempt with Succeed or Skip.
func (s *System) Begin(actor string, q *Queue, t *Task) {
	t.Attempt++
	s.emit(lab.Event{Kind: lab.Started, Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt})
}

// Succeed ends the attempt begun on t as succeeded; note says what it did
// (e.g. the side effect it caused) and may be empty.
func (s *System) Succeed(actor string, q *Queue, t *Task, note string) {
	s.emit(lab.Event{Kind: lab.Succeeded, Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt, Note: note})
}

// Skip ends the attempt begun on t as a duplicate: an idempotency check
// found the work already done, so this delivery did nothing. why says which
// check and what it found.
func (s *System) Skip(actor string, q *Queue, t *Task, why string) {
	s.emit(lab.Event{Kind: lab.Duplicate, Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt, Note: why})
}

// Redeliver puts t back at the tail of q because its acknowledgement never
// arrived: at-least-once delivery hands the task out again even though it
// may already have been processed. reason says why the ack was missing.
func (q *Queue) Redeliver(actor string, t *Task, reason string) {
	q.sys.emit(lab.Event{Kind: lab.Redelivered, Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt, Note: reason})
	q.put(t)
}

// release turns holding queue q into a queue a worker may consume (a
// DLQ being replayed): the tasks resting in it count as work in flight
// from now on, so Wait waits for the worker to handle them. Call it while
// nothing is being put on q. It does nothing to a queue that is not held.
func (q *Queue) release() {
	if q.hold.CompareAndSwap(true, false) {
		for range q.Len() {
			q.sys.work.add()
		}
	}
}

// mustConsume panics if q cannot have a worker: a programming error in a
// lesson, caught by its first test run.
func (q *Queue) mustConsume() {
	if q.hold.Load() {
		panic(fmt.Sprintf("inmem: Worker on holding queue %q: create queues that workers consume with System.Queue", q.name))
	}
}

package inmem

import (
	"context"
	"sync"
	"time"

	"github.com/queuelab/qlab/lab"
)

// Task is one message travelling through in-memory queues. Attempt counts
// the processing attempts so far and travels with the task, as a retry
// counter in a message header would.
type Task struct {
	ID      string
	Attempt int
	Body    []byte // optional payload, for lessons that parse one
}

// ProcessFunc does the work of one attempt and reports its error.
type ProcessFunc func(ctx context.Context, t *Task) error

// System owns a lesson's queues, workers and timers, and knows when all of
// them are idle. Create one per run with New.
type System struct {
	stream *lab.Stream
	clock  lab.Clock
	// Process is the work every Attempt does. New sets it to the plan's
	// simulation: sleep Plan.WorkTime, then fail as Plan.Fails says. Lessons
	// may replace it before starting workers.
	Process ProcessFunc

	ctx     context.Context
	cancel  context.CancelFunc
	work    tracker
	workers sync.WaitGroup

	mu     sync.Mutex
	queues []*Queue
	timers map[*time.Timer]timed
}

type timed struct {
	task *Task
	from string
	to   *Queue
}

// New returns a System that reports to stream and simulates work by plan:
// each attempt sleeps plan.WorkTime, then fails as plan.Fails says.
// Cancelling ctx stops its workers and timers.
func New(ctx context.Context, stream *lab.Stream, plan lab.Plan) *System {
	ctx, cancel := context.WithCancel(ctx)
	s := &System{stream: stream, clock: stream.Clock(), ctx: ctx, cancel: cancel, timers: map[*time.Timer]timed{}}
	s.Process = func(ctx context.Context, t *Task) error {
		if err := s.Sleep(ctx, plan.WorkTime(t.ID, t.Attempt)); err != nil {
			return err
		}
		return plan.Fails(t.ID, t.Attempt)
	}
	return s
}

// Stream returns the stream the system reports to.
func (s *System) Stream() *lab.Stream { return s.stream }

// Context is the system's context: done once the run is stopped.
func (s *System) Context() context.Context { return s.ctx }

// Sleep waits lesson duration d, or until ctx is done.
func (s *System) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(s.clock.Real(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Queue creates a named queue with room for capacity tasks. Put never
// blocks while the queue holds fewer.
func (s *System) Queue(name string, capacity int) *Queue {
	q := &Queue{name: name, sys: s, ch: make(chan *Task, capacity)}
	s.mu.Lock()
	s.queues = append(s.queues, q)
	s.mu.Unlock()
	return q
}

// Worker starts a goroutine named actor that hands each task taken from q
// to handle, one at a time, until the system stops. Whatever handle does
// with the task (ack it, move it, schedule it) must happen before it
// returns: that is how the System knows the task is not lost in between.
func (s *System) Worker(actor string, q *Queue, handle func(t *Task)) {
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		for {
			select {
			case t := <-q.ch:
				handle(t)
				if !q.parked {
					s.work.done()
				}
			case <-s.ctx.Done():
				return
			}
		}
	}()
}

// Attempt runs one processing attempt of t taken from q: it counts the
// attempt, emits started, runs Process and emits succeeded or failed. It
// returns Process's error.
func (s *System) Attempt(actor string, q *Queue, t *Task) error {
	t.Attempt++
	s.emit(lab.Event{Kind: lab.Started, Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt})
	err := s.Process(s.ctx, t)
	if err != nil {
		s.emit(lab.Event{Kind: lab.Failed, Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt, Note: err.Error()})
		return err
	}
	s.emit(lab.Event{Kind: lab.Succeeded, Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt})
	return nil
}

// Schedule moves t from the queue named from to queue to after lesson
// duration d, with time.AfterFunc: the task waits in this process's memory,
// so it is lost if the process dies first (see Crash).
func (s *System) Schedule(actor string, t *Task, from string, to *Queue, d time.Duration) {
	s.emit(lab.Event{Kind: lab.Scheduled, Task: t.ID, Queue: from, To: to.name, Actor: actor, Attempt: t.Attempt, DelayMs: d.Milliseconds()})
	s.work.add()
	s.mu.Lock()
	defer s.mu.Unlock()
	var timer *time.Timer
	timer = s.clock.AfterFunc(d, func() {
		s.mu.Lock()
		_, live := s.timers[timer]
		delete(s.timers, timer)
		s.mu.Unlock()
		if live {
			to.put(t)
			s.work.done()
		}
	})
	s.timers[timer] = timed{task: t, from: from, to: to}
}

// Drop discards t after its final failure at the queue named from. The
// message is gone: the event says so, nothing else will.
func (s *System) Drop(actor string, t *Task, from, reason string) {
	s.emit(lab.Event{Kind: lab.Dropped, Task: t.ID, Queue: from, Actor: actor, Attempt: t.Attempt, Note: reason})
}

// Wait blocks until no task is queued, scheduled or being handled, then
// stops the workers. It returns ctx's error if ctx ends first.
func (s *System) Wait(ctx context.Context) error {
	var err error
	select {
	case <-s.work.idle():
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.ctx.Done():
		err = s.ctx.Err()
	}
	s.Stop()
	return err
}

// Stop stops the workers and pending timers without touching queued tasks.
// It waits for handlers in progress to return.
func (s *System) Stop() {
	s.cancel()
	s.mu.Lock()
	for timer := range s.timers {
		timer.Stop()
	}
	s.mu.Unlock()
	s.workers.Wait()
}

// Crash simulates the process dying: workers and timers stop, and every task
// still sitting in a queue or waiting on a timer is reported lost, because
// memory is all that held it.
func (s *System) Crash(actor string) {
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for timer, w := range s.timers {
		delete(s.timers, timer)
		s.emit(lab.Event{Kind: lab.Lost, Task: w.task.ID, Queue: w.from, To: w.to.name, Actor: actor, Note: "process died while the retry timer was pending"})
	}
	for _, q := range s.queues {
		for len(q.ch) > 0 {
			t := <-q.ch
			s.emit(lab.Event{Kind: lab.Lost, Task: t.ID, Queue: q.name, Actor: actor, Note: "process died with the task in memory"})
		}
	}
}

func (s *System) emit(e lab.Event) { s.stream.Emit(e) }

// tracker counts work in flight and signals when it reaches zero.
type tracker struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.zero = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.zero)
	}
}

// idle returns a channel that is closed once nothing is in flight.
func (t *tracker) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return t.zero
}

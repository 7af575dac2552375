package inmem

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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

	ctx    context.Context
	cancel context.CancelFunc
	work   tracker
	// running is every goroutine the system started (worker loops,
	// producers, timers delivering a task): Stop waits for all of them.
	running    sync.WaitGroup
	goroutines atomic.Int64 // how many of them are running
	live       atomic.Int64 // of those, worker loops
	dead       atomic.Bool  // set by Crash: memory can hold nothing any more

	mu         sync.Mutex
	queues     []*Queue
	timers     map[*time.Timer]timed // pending, and kept once stopped so Crash can report them
	delivering int                   // timers whose task is being put on its queue
	stopped    bool                  // Stop began: timers deliver nothing more
	windows    map[*Task]string      // tasks in a prefetching consumer's hands, by the queue they left
	crashed    bool
	// crashDone is closed once Crash has reported every lost task, so Wait
	// never lets the run end (and summarise) halfway through a crash.
	crashDone chan struct{}
}

// ErrCrashed is what Wait returns after Crash: the run did not finish, the
// process died and took its in-memory tasks with it.
var ErrCrashed = errors.New("the process crashed: in-memory tasks were lost")

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
	s := &System{stream: stream, clock: stream.Clock(), ctx: ctx, cancel: cancel, timers: map[*time.Timer]timed{}, windows: map[*Task]string{}, crashDone: make(chan struct{})}
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
	return s.clock.Wait(ctx, d)
}

// Queue creates a named queue with room for capacity tasks. Put never
// blocks while the queue holds fewer. Its memory grows with what it
// holds, not with capacity (past the first chanRoom tasks).
func (s *System) Queue(name string, capacity int) *Queue {
	q := &Queue{name: name, sys: s, room: capacity}
	if capacity <= chanRoom {
		q.ch = make(chan *Task, capacity)
	} else {
		q.ch = make(chan *Task, chanRoom)
		q.over, q.space = &overflow{}, make(chan struct{}, 1)
	}
	s.mu.Lock()
	s.queues = append(s.queues, q)
	s.mu.Unlock()
	return q
}

// Worker starts a goroutine named actor that hands each task taken from q
// to handle, one at a time, until the system stops. Whatever handle does
// with the task (ack it, move it, schedule it) must happen before it
// returns: that is how the System knows the task is not lost in between.
// q must not be a holding queue (see HoldingQueue). It is the loop lesson
// Q01 writes out with Go, Queue.Receive and Handled.
func (s *System) Worker(actor string, q *Queue, handle func(t *Task)) {
	q.mustConsume()
	s.Go(func() {
		// handled counts the tasks done with but not yet told to the
		// in-flight count: the worker tells it only before it waits for
		// a task (or stops), not after each one, so a busy worker does
		// not write the count the producers write with every put. The
		// count is then too high for a while, never too low: while the
		// worker is busy the System is not idle anyway.
		var handled int64
		defer func() { s.work.doneN(handled) }()
		for {
			t, ok := s.take(q, &handled)
			if !ok {
				return
			}
			handle(t)
			handled++
		}
	})
}

// Go starts a worker's goroutine, running loop: a lesson that writes its
// worker out in full (Q01) calls it instead of Worker. loop takes each
// task with Queue.Receive, does everything it does with the task, then
// calls Handled; it returns once Receive says the system stopped. Stop
// waits for it, and Workers counts it while it runs.
func (s *System) Go(loop func()) {
	s.begin()
	s.live.Add(1)
	go func() {
		defer s.end()
		defer s.live.Add(-1)
		loop()
	}()
}

// Handled tells the system that a worker is done with the task it last
// took with Receive: whatever became of it (acked, sent on, scheduled,
// dropped) has happened, so the task is not lost in between. Call it
// exactly once per task received.
func (s *System) Handled() { s.work.done() }

// Workers is how many worker goroutines the system is running: what a
// design costs in goroutines, counted exactly (runtime.NumGoroutine counts

// prefetch starts a worker on q that holds up to window tasks taken off
// the queue (a broker consumer's prefetch): a fetcher goroutine takes
// them while serve handles them from in, calling settled once for each
// task it has finished with, which frees a place in the window. in closes
// when the system stops. A task in the window is in this process's memory
// only: Crash reports it lost.
func (s *System) prefetch(q *Queue, window int, serve func(in <-chan *Task, settled func(*Task))) {
	q.mustConsume()
	in := make(chan *Task, window)
	slots := make(chan struct{}, window)
	s.begin()
	go func() {
		defer s.end()
		defer close(in)
		for {
			select {
			case slots <- struct{}{}:
			case <-s.ctx.Done():
				return
			}
			t, ok := s.next(q)
			if !ok {
				return
			}
			s.mu.Lock()
			s.windows[t] = q.name
			s.mu.Unlock()
			in <- t // never blocks: a slot was free
		}
	}()
	s.begin()
	s.live.Add(1)
	go func() {
		defer s.end()
		defer s.live.Add(-1)
		serve(in, func(t *Task) {
			s.mu.Lock()
			delete(s.windows, t)
			s.mu.Unlock()
			<-slots
			s.work.done()
		})
	}()
}

// the whole process, whose other goroutines come and go).
func (s *System) Workers() int { return int(s.live.Load()) }

// Goroutines is how many goroutines of the system are running: worker
// loops, producers (Produce) and timers delivering a task. It is zero once
// Stop (or Wait) has returned, which is what a leak check asserts.
func (s *System) Goroutines() int { return int(s.goroutines.Load()) }

// Timers is how many delayed moves (Schedule) are still waiting for their
// timer or putting their task on its queue. It is zero once Stop (or Wait)
// has returned: stopped timers never fire.
func (s *System) Timers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.delivering
	}
	return len(s.timers) + s.delivering
}

// begin counts a goroutine of the system that Stop must wait for; end
// uncounts it when it returns.
func (s *System) begin() {
	s.running.Add(1)
	s.goroutines.Add(1)
}

func (s *System) end() {
	s.goroutines.Add(-1)
	s.running.Done()
}

// next takes the next task from q, blocking until there is one; ok is false
// once the system stops. A task already waiting is taken without a select
// (the common case under load, and much cheaper than a select); the context
// is checked first, so a stopped system never starts another handler.
func (s *System) next(q *Queue) (t *Task, ok bool) {
	if s.ctx.Err() != nil {
		return nil, false
	}
	if t, ok = poll(q); ok {
		return t, true
	}
	select {
	case t = <-q.ch:
		q.took()
		return t, true
	case <-s.ctx.Done():
		return nil, false
	}
}

// take is next for a Worker that has handled tasks it has not yet
// reported (*handled of them): it reports them before it waits for a
// task, so the System can be seen idle while it waits.
func (s *System) take(q *Queue, handled *int64) (t *Task, ok bool) {
	if s.ctx.Err() != nil {
		return nil, false
	}
	if t, ok = poll(q); ok {
		return t, true
	}
	s.work.doneN(*handled)
	*handled = 0
	return s.next(q)
}

// poll takes a task already waiting in q, without blocking.
func poll(q *Queue) (*Task, bool) {
	select {
	case t := <-q.ch:
		q.took()
		return t, true
	default:
		return nil, false
	}
}

// Attempt runs one processing attempt of t taken from q: it counts the
// attempt, emits started, runs Process and emits succeeded or failed. It
// returns Process's error.
func (s *System) Attempt(actor string, q *Queue, t *Task) error {
	t.Attempt++
	at := lab.Event{Task: t.ID, Queue: q.name, Actor: actor, Attempt: t.Attempt}
	return s.stream.Attempt(at, func() error { return s.Process(s.ctx, t) })
}

// Schedule moves t from the queue named from to queue to after lesson
// duration d, with time.AfterFunc on the lesson clock: the task waits in
// this process's memory, so it is lost if the process dies first (see
// Crash). ScheduleOn is the same with the timer on the caller's page.
func (s *System) Schedule(actor string, t *Task, from string, to *Queue, d time.Duration) {
	s.ScheduleOn(actor, t, from, to, d, func(move func()) *time.Timer { return s.clock.AfterFunc(d, move) })
}

// ScheduleOn is Schedule with the timer in the caller's hands: start must
// arm a timer that calls move once, after d (the lesson clock's AfterFunc),
// and return it. move puts t on to. The System keeps the bookkeeping: the
// scheduled event, t counted in flight until move, the timer stopped by
// Stop and reported by Crash.
func (s *System) ScheduleOn(actor string, t *Task, from string, to *Queue, d time.Duration, start func(move func()) *time.Timer) {
	s.schedule(lab.Event{Kind: lab.Scheduled, Task: t.ID, Queue: from, To: to.name, Actor: actor, Attempt: t.Attempt, DelayMs: d.Milliseconds()}, t, to, start)
}

// Clock is the lesson clock the system keeps time with.
func (s *System) Clock() lab.Clock { return s.clock }

// schedule emits e (a scheduled event) and has start arm the timer that
// puts t on to.
func (s *System) schedule(e lab.Event, t *Task, to *Queue, start func(move func()) *time.Timer) {
	s.emit(e)
	s.work.add()
	s.mu.Lock()
	defer s.mu.Unlock()
	var timer *time.Timer
	timer = start(func() {
		s.mu.Lock()
		claimed := s.claimLocked(timer) // timer is read under mu, which schedule holds while it sets it
		s.mu.Unlock()
		if !claimed {
			return
		}
		defer s.delivered()
		to.put(t)
		s.work.done()
	})
	s.timers[timer] = timed{task: t, from: e.Queue, to: to}
}

// claimLocked takes a fired timer's task for delivery and counts the
// delivery as a goroutine Stop waits for. It refuses once Stop has begun,
// leaving the task recorded for Crash: Stop's timer.Stop can lose the race
// with a timer that has just fired, and that timer must then deliver
// nothing. The caller holds mu.
func (s *System) claimLocked(timer *time.Timer) bool {
	if _, pending := s.timers[timer]; !pending || s.stopped {
		return false
	}
	delete(s.timers, timer)
	s.delivering++
	s.begin()
	return true
}

// delivered ends a delivery claimLocked started.
func (s *System) delivered() {
	s.mu.Lock()
	s.delivering--
	s.mu.Unlock()
	s.end()
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
	s.mu.Lock()
	crashed := s.crashed
	s.mu.Unlock()
	if crashed {
		<-s.crashDone
		return ErrCrashed
	}
	return err
}

// Stop stops the workers, producers and pending timers without touching
// queued tasks. It waits for handlers in progress and timers delivering a
// task to return; a put that finds its queue full gives up (see Queue.put),
// so none of them blocks for ever. When Stop returns, no goroutine of the
// system is left (Goroutines and Timers are zero).
func (s *System) Stop() {
	s.cancel()
	s.mu.Lock()
	s.stopped = true
	for timer := range s.timers {
		timer.Stop()
	}
	s.mu.Unlock()
	s.running.Wait()
}

// Crash simulates the process dying: workers and timers stop, and every task
// still sitting in a queue or waiting on a timer is reported lost, because
// memory is all that held it.
func (s *System) Crash(actor string) {
	s.mu.Lock()
	again := s.crashed
	s.crashed = true
	s.dead.Store(true)
	s.mu.Unlock()
	if again {
		return // a process dies once
	}
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(s.crashDone)
	for timer, w := range s.timers {
		delete(s.timers, timer)
		s.emit(lab.Event{Kind: lab.Lost, Task: w.task.ID, Queue: w.from, To: w.to.name, Actor: actor, Note: "process died while the retry timer was pending"})
	}
	for t, queue := range s.windows {
		delete(s.windows, t)
		s.emit(lab.Event{Kind: lab.Lost, Task: t.ID, Queue: queue, Actor: actor, Note: "process died with the task in a consumer's prefetch window"})
	}
	for _, q := range s.queues {
		for t, ok := q.tryTake(); ok; t, ok = q.tryTake() {
			s.emit(lab.Event{Kind: lab.Lost, Task: t.ID, Queue: q.name, Actor: actor, Note: "process died with the task in memory"})
		}
	}
}

func (s *System) emit(e lab.Event) { s.stream.Emit(e) }

// tracker counts work in flight and signals when it reaches zero. The
// count is atomic so the hot path (a put, a handled task) takes no lock;
// the mutex guards only the zero channel, touched when the count crosses
// zero and by idle.
type tracker struct {
	// n changes with every put and every handled task, from the producer's
	// core and the worker's: the pads keep the System's fields that both
	// only read (its context, Process, stream) off n's cache line, which
	// would otherwise move between the cores with every change of n.
	_    [64]byte
	n    atomic.Int64
	_    [56]byte
	mu   sync.Mutex
	zero chan struct{} // closed once n reached zero; nil or closed while idle
}

func (t *tracker) add() {
	if t.n.Add(1) == 1 {
		t.mu.Lock()
		t.arm()
		t.mu.Unlock()
	}
}

func (t *tracker) done() { t.doneN(1) }

// doneN is done n times over, in one change of the count (none if n is 0).
func (t *tracker) doneN(n int64) {
	if n != 0 && t.n.Add(-n) == 0 {
		t.mu.Lock()
		// Re-check under the lock: new work may have started since.
		if t.n.Load() == 0 && isOpen(t.zero) {
			close(t.zero)
		}
		t.mu.Unlock()
	}
}

// idle returns a channel that is closed once nothing is in flight.
func (t *tracker) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n.Load() == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	t.arm() // add may not have armed it yet
	return t.zero
}

// arm makes sure zero is an open channel for the work now in flight. The
// caller holds mu.
func (t *tracker) arm() {
	if !isOpen(t.zero) {
		t.zero = make(chan struct{})
	}
}

// isOpen reports whether c is a channel not yet closed.
func isOpen(c chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return false
	default:
		return true
	}
}

// QueueNames lists the names of the queues created so far, in creation
// order: what a lesson's design costs in queues.
func (s *System) QueueNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, len(s.queues))
	for i, q := range s.queues {
		names[i] = q.name
	}
	return names
}

package lab

import "sync"

// Stream is the one place events enter. It stamps each event with Seq,
// lesson time, Lesson and Backend and keeps the Ledger under one lock, and
// queues the event for every sink, which each get them in Seq order from a
// goroutine of their own, never under that lock (it starts at most a
// millisecond after an event waits for it; Flush and Finish start it at
// once): a slow sink never holds up a worker until it is far behind (a
// plain sink, once backlogLimit events wait for it, makes the emitters
// wait for it, so memory stays bounded; a Bounded one, a reader that may
// fall behind, misses events instead, and says how many). Safe for
// concurrent use by any number of workers.
type Stream struct {
	lesson  string
	backend Backend
	clock   Clock

	finishing sync.Mutex // held by Finish throughout, so a second call waits for the first

	// The fields above are read without mu on every emit; the ones below
	// change with every emit. The pad keeps them on separate cache lines,
	// so an emitter's clock read does not fetch the line the last one
	// wrote.
	_        [64]byte
	mu       sync.Mutex
	seq      int
	lastMs   int64 // the latest t_ms stamped
	outboxes []*outbox
	inline   []Sink
	ledger   Ledger
	finished bool

	drains pending // plain sinks' deliveries under way
	// handing is taken before mu is released and held while the inline
	// get the event: they see Seq order, and mu is free meanwhile.
	handing sync.Mutex
}

// NewStream starts a stream for one run of lesson (e.g. "q07") on backend,
// stamping lesson time from clock.
func NewStream(lesson string, backend Backend, clock Clock, sinks ...Sink) *Stream {
	s := &Stream{lesson: lesson, backend: backend, clock: clock}
	for _, sink := range sinks {
		if k, ok := sink.(Inline); ok {
			s.inline = append(s.inline, k)
			continue
		}
		s.outboxes = append(s.outboxes, newOutbox(sink, &s.mu, &s.drains))
	}
	return s
}

// Tap adds an inline sink to a running stream: it is called in the
// emitting goroutine with every event emitted after Tap returns (a lesson
// that reads its own run's metrics, Q22). Safe for concurrent use.
func (s *Stream) Tap(sink Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handing.Lock() // no hand-over is reading s.inline meanwhile
	defer s.handing.Unlock()
	s.inline = append(s.inline[:len(s.inline):len(s.inline)], sink)
}

// Sinks returns the sinks the stream feeds, plain, bounded and inline, in
// no promised order: a lesson that reports what only a backend knows to
// every metrics sink of its run (Q22 and qlab run --metrics) finds them
// here. Safe for concurrent use.
func (s *Stream) Sinks() []Sink {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sink, 0, len(s.outboxes)+len(s.inline))
	for _, o := range s.outboxes {
		out = append(out, o.sink)
	}
	return append(out, s.inline...)
}

// Lesson returns the lesson id the stream stamps ("q07").
func (s *Stream) Lesson() string { return s.lesson }

// Backend returns the backend the stream stamps.
func (s *Stream) Backend() Backend { return s.backend }

// Clock returns the stream's lesson clock.
func (s *Stream) Clock() Clock { return s.clock }

// Emit stamps e and delivers it to every sink. Events emitted after Finish
// are dropped: the summaries are the last word of a run.
func (s *Stream) Emit(e Event) { s.emit(&e) }

// emit is Emit without a copy of the event, which it stamps in place.
func (s *Stream) emit(e *Event) {
	// Read the clock before taking the lock: the read is the costliest part
	// of a stamp, and every other emitter waits while the lock is held.
	// emitLocked keeps t_ms from going back when two emitters cross.
	now := s.clock.Elapsed().Milliseconds()
	if s.lockWithRoom() {
		now = s.clock.Elapsed().Milliseconds() // stamped when it got its turn
	}
	if s.finished {
		s.mu.Unlock()
		return
	}
	s.emitLocked(e, now)
	if len(s.inline) == 0 { // the common case: no copy of e for handOver
		s.mu.Unlock()
		return
	}
	s.handOver(*e)
}

// lockWithRoom takes mu once no plain sink's queue is at its backlog
// limit, waiting (without mu) for the sinks that are, and reports whether
// it waited.
func (s *Stream) lockWithRoom() (waited bool) {
	for {
		s.mu.Lock()
		var room <-chan struct{}
		for _, o := range s.outboxes {
			if room = o.full(); room != nil {
				break
			}
		}
		if room == nil {
			return waited
		}
		s.mu.Unlock()
		<-room
		waited = true
	}
}

// handOver gives the inline sinks e outside mu, which the caller holds and
// handOver releases: it takes handing first, so the inline sinks get events in
// the order mu stamped them.
func (s *Stream) handOver(es ...Event) {
	if len(s.inline) == 0 {
		s.mu.Unlock()
		return
	}
	s.handing.Lock()
	s.mu.Unlock()
	defer s.handing.Unlock()
	for _, e := range es {
		for _, k := range s.inline {
			k.Emit(e)
		}
	}
}

// emitLocked stamps *e with the next Seq and lesson time now (or the last
// stamp, if another emitter read the clock later but took the lock first,
// so t_ms never decreases along Seq), records it in the ledger and queues
// it in every plain or bounded sink's outbox; the caller then hands it to
// the inline sinks (handOver). The caller holds mu.
func (s *Stream) emitLocked(e *Event, now int64) {
	s.seq++
	e.Seq = s.seq
	e.TMs = max(now, s.lastMs)
	s.lastMs = e.TMs
	e.Lesson = s.lesson
	e.Backend = s.backend
	s.ledger.observe(e)
	for _, o := range s.outboxes {
		o.push(e)
	}
}

// Reserve makes room in the ledger for n tasks in all (see
// Ledger.Reserve): a run that knows its task count says so before its
// first event, and its memory does not jump as the ledger grows.
func (s *Stream) Reserve(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ledger.Reserve(n)
}

// Attempt reports one processing attempt: it emits e as started, runs do,
// then emits e as succeeded, or as failed with do's error as its note. e
// names the task, queue, actor and attempt number; Attempt sets the kind.
// It returns do's error.
func (s *Stream) Attempt(e Event, do func() error) error {
	e.Kind = Started
	s.emit(&e) // stamps e; the next emit stamps it afresh
	if err := do(); err != nil {
		e.Kind, e.Note = Failed, err.Error()
		s.emit(&e)
		return err
	}
	e.Kind = Succeeded
	s.emit(&e)
	return nil
}

// Finish ends the run: it emits one Summary per task, in creation order,
// with the fate and attempt count the Ledger derived, waits until every
// sink has been handed what was queued for it, and returns the records.
// Events emitted once Finish has begun are dropped. Calling Finish again
// returns the same records and emits nothing. The records are the
// ledger's own, not a copy (nothing changes them once the run is
// finished, and a 100,000-task run would hold two of them): read them,
// do not modify them.
func (s *Stream) Finish() []TaskRecord {
	s.finishing.Lock()
	defer s.finishing.Unlock()
	defer s.Flush()
	s.mu.Lock()
	n := len(s.ledger.records)
	tasks := s.ledger.records[:n:n] // an append by the caller copies
	done := s.finished
	s.finished = true // from here on, the summaries are the only events
	s.mu.Unlock()
	if done {
		return tasks
	}
	// One at a time, each waiting for room like any event: a run of
	// 100,000 tasks does not queue 100,000 summaries at once.
	for _, t := range tasks {
		e := Event{Kind: Summary, Task: t.ID, Fate: t.Fate, Attempt: t.Attempts}
		s.lockWithRoom()
		s.emitLocked(&e, s.clock.Elapsed().Milliseconds())
		s.handOver(e)
	}
	return tasks
}

// Flush waits until every sink has been handed every event queued for it
// so far (for a reader of a sink mid-run, such as a test). It starts the
// delivery of what waits for the timer (outbox) rather than wait for it.
func (s *Stream) Flush() {
	s.mu.Lock()
	for _, o := range s.outboxes {
		o.kick()
	}
	s.mu.Unlock()
	s.drains.wait()
}

// Missed is how many events the stream's Bounded sinks lost, all told.
func (s *Stream) Missed() int {
	n := 0
	for _, o := range s.outboxes {
		if o.bounded != nil {
			n += o.bounded.Missed()
		}
	}
	return n
}

// Progress is what a poller of a run needs without copying every record:
// how many tasks exist, how many are still pending, and a count that
// grows whenever a task is created or its attempts or fate change.
func (s *Stream) Progress() (tasks, pending int, moves uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ledger.records), s.ledger.pending, s.ledger.moves
}

// Tasks returns the ledger's current view of every task, in creation order.
func (s *Stream) Tasks() []TaskRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledger.Tasks()
}

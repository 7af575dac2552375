package lab

import "sync"

// Stream is the one place events enter. It stamps each event with Seq,
// lesson time, Lesson and Backend, keeps the Ledger, and hands the event to
// every sink, all under one lock so every sink sees the same order. Safe for
// concurrent use by any number of workers.
type Stream struct {
	lesson  string
	backend Backend
	clock   Clock

	mu       sync.Mutex
	seq      int
	lastMs   int64 // the latest t_ms stamped
	sinks    []Sink
	ledger   Ledger
	finished bool
}

// NewStream starts a stream for one run of lesson (e.g. "q07") on backend,
// stamping lesson time from clock.
func NewStream(lesson string, backend Backend, clock Clock, sinks ...Sink) *Stream {
	return &Stream{lesson: lesson, backend: backend, clock: clock, sinks: sinks}
}

// Lesson returns the lesson id the stream stamps ("q07").
func (s *Stream) Lesson() string { return s.lesson }

// Backend returns the backend the stream stamps.
func (s *Stream) Backend() Backend { return s.backend }

// Clock returns the stream's lesson clock.
func (s *Stream) Clock() Clock { return s.clock }

// Emit stamps e and delivers it to every sink. Events emitted after Finish
// are dropped: the summaries are the last word of a run.
func (s *Stream) Emit(e Event) {
	// Read the clock before taking the lock: the read is the costliest part
	// of a stamp, and every other emitter waits while the lock is held.
	// emitLocked keeps t_ms from going back when two emitters cross.
	now := s.clock.Elapsed().Milliseconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	s.emitLocked(&e, now)
}

// emitLocked stamps *e with the next Seq and lesson time now (or the last
// stamp, if another emitter read the clock later but took the lock first,
// so t_ms never decreases along Seq), records it in the ledger and hands it
// to every sink. The caller holds mu.
func (s *Stream) emitLocked(e *Event, now int64) {
	s.seq++
	e.Seq = s.seq
	e.TMs = max(now, s.lastMs)
	s.lastMs = e.TMs
	e.Lesson = s.lesson
	e.Backend = s.backend
	s.ledger.observe(e)
	for _, sink := range s.sinks {
		sink.Emit(*e)
	}
}

// Attempt reports one processing attempt: it emits e as started, runs do,
// then emits e as succeeded, or as failed with do's error as its note. e
// names the task, queue, actor and attempt number; Attempt sets the kind.
// It returns do's error.
func (s *Stream) Attempt(e Event, do func() error) error {
	e.Kind = Started
	s.Emit(e)
	if err := do(); err != nil {
		e.Kind, e.Note = Failed, err.Error()
		s.Emit(e)
		return err
	}
	e.Kind = Succeeded
	s.Emit(e)
	return nil
}

// Finish ends the run: it emits one Summary per task, in creation order,
// with the fate and attempt count the Ledger derived, and returns the
// records. Calling Finish again returns the same records and emits nothing.
func (s *Stream) Finish() []TaskRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	tasks := s.ledger.Tasks()
	if s.finished {
		return tasks
	}
	for _, t := range tasks {
		s.emitLocked(&Event{Kind: Summary, Task: t.ID, Fate: t.Fate, Attempt: t.Attempts}, s.clock.Elapsed().Milliseconds())
	}
	s.finished = true
	return tasks
}

// Tasks returns the ledger's current view of every task, in creation order.
func (s *Stream) Tasks() []TaskRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledger.Tasks()
}

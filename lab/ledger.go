package lab

// TaskRecord is what the Ledger knows about one task.
type TaskRecord struct {
	ID        string
	Attempts  int    // Started events seen
	Fate      Fate   // derived from the latest event that decides it
	FirstFail int64  // t_ms of the first Failed or Rejected, -1 if none
	Settled   int64  // t_ms of the event that set a final fate, -1 while pending
	Reason    string // the note of the event that set the final fate ("" while pending)
}

// Ledger derives every task's fate and attempt count from the events it
// observes. A task exists from its first Enqueued (or Refused) event. The
// latest deciding event wins: succeeded → done, dead_lettered → dead,
// dropped → dropped, lost → lost, duplicate → done (the work was already
// done), stranded → stranded, refused → refused; a task that
// re-enters the system (enqueued again, moved, scheduled, redelivered)
// becomes pending until decided again. Ledger is not safe for concurrent
// use; Stream serialises access. The zero Ledger is empty and ready.
type Ledger struct {
	// records holds every task in creation order; index maps an id to its
	// record. A flat slice keeps the records together and costs no
	// allocation per task, which matters on the Stream's hot path.
	records []TaskRecord
	index   map[string]int
	// pending counts the records whose fate is pending, and moves counts
	// every change of a record's attempts or fate (and every new record):
	// a poller learns whether the run settled or moved at all without
	// copying every record (Stream.Progress).
	pending int
	moves   uint64
}

// Observe updates the ledger with e. Events about unknown tasks (other than
// Enqueued) and Summary events are ignored.
func (l *Ledger) Observe(e Event) { l.observe(&e) }

// observe is Observe without copying the event, for the Stream's hot path.
func (l *Ledger) observe(e *Event) {
	if e.Task == "" || e.Kind == Summary {
		return
	}
	i, ok := l.index[e.Task]
	if !ok {
		if e.Kind != Enqueued && e.Kind != Refused {
			return
		}
		if l.index == nil {
			l.index = map[string]int{}
		}
		i = len(l.records)
		l.index[e.Task] = i
		l.records = append(l.records, TaskRecord{ID: e.Task, Fate: FatePending, FirstFail: -1, Settled: -1})
		l.pending++
		l.moves++
	}
	r := &l.records[i]
	was := r.Fate
	defer l.count(was, r)
	switch e.Kind {
	case Started:
		r.Attempts++
		l.moves++
	case Failed, Rejected:
		if r.FirstFail < 0 {
			r.FirstFail = e.TMs
		}
	case Succeeded, Duplicate:
		r.settle(FateDone, e)
	case DeadLettered:
		r.settle(FateDead, e)
	case Dropped:
		r.settle(FateDropped, e)
	case Lost:
		r.settle(FateLost, e)
	case Stranded:
		r.settle(FateStranded, e)
	case Refused:
		r.settle(FateRefused, e)
	case Enqueued, Moved, Scheduled, Redelivered:
		if r.Fate != FatePending {
			r.Fate, r.Settled, r.Reason = FatePending, -1, ""
		}
	}
}

func (r *TaskRecord) settle(f Fate, e *Event) { r.Fate, r.Settled, r.Reason = f, e.TMs, e.Note }

// count keeps pending and moves up to date after r's fate went from was
// to what it is now.
func (l *Ledger) count(was Fate, r *TaskRecord) {
	if r.Fate == was {
		return
	}
	l.moves++
	switch {
	case was == FatePending:
		l.pending--
	case r.Fate == FatePending:
		l.pending++
	}
}

// Tasks returns a copy of every task's record in creation order.
func (l *Ledger) Tasks() []TaskRecord {
	out := make([]TaskRecord, len(l.records))
	copy(out, l.records)
	return out
}

// Task returns the record for id and whether the task exists.
func (l *Ledger) Task(id string) (TaskRecord, bool) {
	i, ok := l.index[id]
	if !ok {
		return TaskRecord{}, false
	}
	return l.records[i], true
}

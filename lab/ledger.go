package lab

import "hash/maphash"

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
	// records holds every task in creation order. A flat slice keeps the
	// records together and costs no allocation per task, which matters on
	// the Stream's hot path; Finish hands it out as is.
	records []TaskRecord
	// slots is the index from an id to its record: an open-addressed table
	// (a power of two long, at most three quarters full) of record
	// positions plus one, 0 for an empty slot. The id itself is read from
	// the record, so the index costs 4 bytes a slot (about 10 a task)
	// where a map[string]int cost 30-60: a 100,000-task run's memory stays
	// flat (docs/benchmarks.md).
	slots []uint32
	seed  maphash.Seed
	// last is the record observed last: a task's events come in runs
	// (started, then succeeded or failed, then where it goes), so most
	// lookups end here without hashing the id.
	last int
	// pending counts the records whose fate is pending, and moves counts
	// every change of a record's attempts or fate (and every new record):
	// a poller learns whether the run settled or moved at all without
	// copying every record (Stream.Progress).
	pending int
	moves   uint64
	reasons map[string]string // the reasons records share (intern)
}

// Observe updates the ledger with e. Events about unknown tasks (other than
// Enqueued) and Summary events are ignored.
func (l *Ledger) Observe(e Event) { l.observe(&e) }

// observe is Observe without copying the event, for the Stream's hot path.
func (l *Ledger) observe(e *Event) {
	if e.Task == "" || e.Kind == Summary {
		return
	}
	i, slot := l.find(e.Task)
	if i < 0 {
		if e.Kind != Enqueued && e.Kind != Refused {
			return
		}
		i = l.add(e.Task, slot)
	}
	l.last = i
	r := &l.records[i]
	was := r.Fate
	switch e.Kind {
	case Started:
		r.Attempts++
		l.moves++
	case Failed, Rejected:
		if r.FirstFail < 0 {
			r.FirstFail = e.TMs
		}
	case Succeeded, Duplicate:
		l.settle(r, FateDone, e)
	case DeadLettered:
		l.settle(r, FateDead, e)
	case Dropped:
		l.settle(r, FateDropped, e)
	case Lost:
		l.settle(r, FateLost, e)
	case Stranded:
		l.settle(r, FateStranded, e)
	case Refused:
		l.settle(r, FateRefused, e)
	case Enqueued, Moved, Scheduled, Redelivered:
		if r.Fate != FatePending {
			r.Fate, r.Settled, r.Reason = FatePending, -1, ""
		}
	}
	l.count(was, r)
}

// find returns the position of id's record, or -1 and the empty slot
// where add would index it (-1 while there is no table).
func (l *Ledger) find(id string) (i, slot int) {
	if l.last < len(l.records) && l.records[l.last].ID == id {
		return l.last, -1
	}
	if len(l.slots) == 0 {
		return -1, -1
	}
	mask := len(l.slots) - 1
	for j := int(maphash.String(l.seed, id)) & mask; ; j = (j + 1) & mask {
		s := l.slots[j]
		if s == 0 {
			return -1, j
		}
		if l.records[s-1].ID == id {
			return int(s - 1), j
		}
	}
}

// add appends a pending record for id, indexing it at slot (the empty
// slot find returned) unless the table must grow first, and returns its
// position.
func (l *Ledger) add(id string, slot int) int {
	i := len(l.records)
	l.records = append(l.records, TaskRecord{ID: id, Fate: FatePending, FirstFail: -1, Settled: -1})
	l.pending++
	l.moves++
	if slot < 0 || (i+1)*4 > len(l.slots)*3 { // no table yet, or too full
		l.grow()
		return i
	}
	l.slots[slot] = uint32(i + 1)
	return i
}

// grow doubles the index (16 slots to start with) and indexes every
// record again.
func (l *Ledger) grow() {
	if len(l.slots) == 0 {
		l.seed = maphash.MakeSeed()
	}
	l.slots = make([]uint32, max(16, 2*len(l.slots)))
	for i := range l.records {
		l.slots[l.free(l.records[i].ID)] = uint32(i + 1)
	}
}

// free is the first empty slot along id's probe sequence.
func (l *Ledger) free(id string) int {
	mask := len(l.slots) - 1
	j := int(maphash.String(l.seed, id)) & mask
	for l.slots[j] != 0 {
		j = (j + 1) & mask
	}
	return j
}

// settle gives r its final fate, set by e, with e's note as the reason.
func (l *Ledger) settle(r *TaskRecord, f Fate, e *Event) {
	r.Fate, r.Settled, r.Reason = f, e.TMs, l.intern(e.Note)
}

// maxReasons bounds the reasons a ledger shares (intern): a run's tasks
// end for a handful of reasons, and one that names its task in each is
// kept as it is once this many are known.
const maxReasons = 256

// intern returns the copy of reason the ledger keeps already, if any: a
// reason is mostly built afresh for every task ("no retries left: " +
// err.Error()), and 25,000 dropped tasks would each keep their own.
func (l *Ledger) intern(reason string) string {
	if reason == "" {
		return ""
	}
	if kept, ok := l.reasons[reason]; ok {
		return kept
	}
	if len(l.reasons) < maxReasons {
		if l.reasons == nil {
			l.reasons = map[string]string{}
		}
		l.reasons[reason] = reason
	}
	return reason
}

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
	i, _ := l.find(id)
	if i < 0 {
		return TaskRecord{}, false
	}
	return l.records[i], true
}

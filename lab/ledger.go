package lab

import (
	"hash/maphash"
	"unsafe"
)

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
// becomes pending until decided again. A redelivery in the queue a task
// was dead-lettered to is no re-entry: its DLQ's consumer handing it out
// again only reports a fate already decided. Ledger is not safe for concurrent
// use; Stream serialises access. The zero Ledger is empty and ready.
type Ledger struct {
	// records holds every task in creation order. A flat slice keeps the
	// records together and costs no allocation per task, which matters on
	// the Stream's hot path; Finish hands it out as is.
	records []TaskRecord
	// slots is the index from an id to its record: an open-addressed table
	// (a power of two long, at most three quarters full). A slot holds
	// the record's position plus one in its low 32 bits (0: empty) and
	// the high 32 bits of the id's hash above them, so a probe compares
	// an id only when those agree. The id itself is read from the record:
	// the index costs 8 bytes a slot (about 20 a task) where a
	// map[string]int cost 30-60, and a 100,000-task run's memory stays
	// flatter (docs/benchmarks.md).
	slots []uint64
	seed  maphash.Seed
	// recent are the two records observed last, most recent first, as
	// positions plus one (0: none): a task's events come in runs (started,
	// then succeeded or failed, then where it goes), between which another
	// emitter's may fall, so most lookups end here without hashing the id.
	recent [2]int
	// pending counts the records whose fate is pending, and moves counts
	// every change of a record's attempts or fate (and every new record):
	// a poller learns whether the run settled or moved at all without
	// copying every record (Stream.Progress).
	pending int
	moves   uint64
	reasons map[string]string // the reasons records share (intern)
	// parked is where each dead-lettered record went (DeadLettered's To),
	// by position, while it stays dead: only those tasks pay for it.
	parked map[int]string
}

// Observe updates the ledger with e. Events about unknown tasks (other than
// Enqueued) and Summary events are ignored.
func (l *Ledger) Observe(e Event) { l.observe(&e) }

// observe is Observe without copying the event, for the Stream's hot path.
func (l *Ledger) observe(e *Event) {
	if e.Task == "" || e.Kind == Summary {
		return
	}
	i, slot, entry := l.find(e.Task)
	if i < 0 {
		if e.Kind != Enqueued && e.Kind != Refused {
			return
		}
		i = l.add(e.Task, slot, entry)
	}
	if l.recent[0] != i+1 {
		l.recent[0], l.recent[1] = i+1, l.recent[0]
	}
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
		l.park(i, e.To)
	case Dropped:
		l.settle(r, FateDropped, e)
	case Lost:
		l.settle(r, FateLost, e)
	case Stranded:
		l.settle(r, FateStranded, e)
	case Refused:
		l.settle(r, FateRefused, e)
	case Enqueued, Moved, Scheduled, Redelivered:
		if e.Kind == Redelivered && r.Fate == FateDead && l.parked[i] == e.Queue {
			break // its DLQ's consumer lost its ack: the fate stands
		}
		if r.Fate != FatePending {
			r.Fate, r.Settled, r.Reason = FatePending, -1, ""
			delete(l.parked, i)
		}
	}
	l.count(was, r)
}

// park records that record i was dead-lettered to queue (none: "").
// Without it, a redelivery in the DLQ reopened the task, and nothing ever
// settled it again: compare 10's interrupted run cut the DLQ worker's
// connection while it held T08, and the run waited until it stalled.
func (l *Ledger) park(i int, queue string) {
	if queue == "" {
		delete(l.parked, i)
		return
	}
	if l.parked == nil {
		l.parked = map[int]string{}
	}
	l.parked[i] = queue
}

// find returns the position of id's record, or -1, the empty slot
// where add would index it (-1 while there is no table) and what add
// stores there.
func (l *Ledger) find(id string) (i, slot int, entry uint64) {
	for _, p := range l.recent {
		// The same string, not only an equal one: a cheap test that may
		// miss (the table then finds it), and never compares bytes.
		if p > 0 && same(l.records[p-1].ID, id) {
			return p - 1, -1, 0
		}
	}
	if len(l.slots) == 0 {
		return -1, -1, 0
	}
	h := maphash.String(l.seed, id)
	tag := h &^ (1<<32 - 1)
	mask := len(l.slots) - 1
	for j := int(h) & mask; ; j = (j + 1) & mask {
		s := l.slots[j]
		if s == 0 {
			return -1, j, tag
		}
		if s&^(1<<32-1) == tag && l.records[uint32(s)-1].ID == id {
			return int(uint32(s) - 1), j, tag
		}
	}
}

// same reports whether a and b are one string: the same bytes in memory.
func same(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// add appends a pending record for id, indexing it at slot with entry's
// tag (what find returned) unless the table must grow first, and returns
// its position.
func (l *Ledger) add(id string, slot int, entry uint64) int {
	i := len(l.records)
	l.records = append(l.records, TaskRecord{ID: id, Fate: FatePending, FirstFail: -1, Settled: -1})
	l.pending++
	l.moves++
	if slot < 0 || (i+1)*4 > len(l.slots)*3 { // no table yet, or too full
		l.grow()
		return i
	}
	l.slots[slot] = entry | uint64(i+1)
	return i
}

// Reserve makes room for n tasks in all, so that a run that knows how
// many tasks it will make (a plan's) grows neither the records nor the
// index on the way: growing copies the records into an array a quarter
// larger, and for a moment holds both (13 MB at 100,000 tasks, where the
// records alone are 7). More tasks than n still fit; they grow it then.
func (l *Ledger) Reserve(n int) {
	if n > cap(l.records) {
		l.records = append(make([]TaskRecord, 0, n), l.records...)
	}
	if want := slotsFor(n); want > len(l.slots) {
		l.resize(want)
	}
}

// slotsFor is the index's size for n records: a power of two, at least
// 16, at most three quarters full.
func slotsFor(n int) int {
	s := 16
	for n*4 > s*3 {
		s *= 2
	}
	return s
}

// grow doubles the index (16 slots to start with) and indexes every
// record again.
func (l *Ledger) grow() { l.resize(max(16, 2*len(l.slots))) }

// resize makes the index size long (a power of two) and indexes every
// record again.
func (l *Ledger) resize(size int) {
	if len(l.slots) == 0 {
		l.seed = maphash.MakeSeed()
	}
	l.slots = make([]uint64, size)
	mask := len(l.slots) - 1
	for i := range l.records {
		h := maphash.String(l.seed, l.records[i].ID)
		j := int(h) & mask
		for l.slots[j] != 0 {
			j = (j + 1) & mask
		}
		l.slots[j] = h&^(1<<32-1) | uint64(i+1)
	}
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
	i, _, _ := l.find(id)
	if i < 0 {
		return TaskRecord{}, false
	}
	return l.records[i], true
}

package lab

// Kind names what happened in an Event. The values are part of the public
// JSON contract (see docs/cli.md, "JSON event contract") and never change meaning.
type Kind string

// The event kinds of the JSON contract.
const (
	Enqueued     Kind = "enqueued"      // a task is created and put on its first queue
	Started      Kind = "started"       // a worker begins a processing attempt
	Succeeded    Kind = "succeeded"     // the attempt finished without error
	Failed       Kind = "failed"        // the attempt returned an error (Note = error)
	Moved        Kind = "moved"         // the task went from Queue to To at once, landing at Place (To = Queue: a requeue)
	Scheduled    Kind = "scheduled"     // the task will reach To after DelayMs of lesson time
	DeadLettered Kind = "dead_lettered" // the task was parked in a dead-letter queue (To)
	Dropped      Kind = "dropped"       // discarded after a final failure: the message is gone
	Alerted      Kind = "alerted"       // someone was told (Note = the alert)
	Breaker      Kind = "breaker"       // a circuit breaker changed state (Note = new state)
	Rejected     Kind = "rejected"      // an open breaker failed the call fast
	Duplicate    Kind = "duplicate"     // an idempotency check skipped a repeated delivery
	Redelivered  Kind = "redelivered"   // the broker handed an unacknowledged task out again
	Lost         Kind = "lost"          // gone without a trace (e.g. the process died)
	Summary      Kind = "summary"       // one per task at the end of a run (Fate, Attempt)
	Phase        Kind = "phase"         // the lesson starts a new part of its run (Note = the part's title)
	Received     Kind = "received"      // a worker took a parked task off a dead-letter queue to act on it (no attempt)
	// ChannelClosed: the broker closed a channel with an error (Note = its
	// reply code and text). It settles no task: every delivery unacked on
	// the channel goes back to its queue, and a redelivered event says so.
	ChannelClosed Kind = "channel_closed"
	// Refused: the broker would not take a publish: it nacked it (a full
	// queue that rejects publishes) or returned it (nothing routes it). The
	// publisher has the only copy (Note = why). Like enqueued, it makes a
	// task exist.
	Refused Kind = "refused"
	// Stranded: the task sits in To (or Queue), where nothing consumes it
	// and nothing moves it on: it will wait there until a person acts.
	Stranded Kind = "stranded"
	// Mailed: a mail went to a customer as the work itself (Note = the
	// mail). An alert to an operator is alerted, not mailed.
	Mailed Kind = "mailed"
)

// Kinds lists every kind of the contract, in the order above. A renderer,
// the ledger and the TUI each have a rule for every one; a test in each
// says so, so a new kind cannot vanish from what a person sees.
var Kinds = []Kind{Enqueued, Started, Succeeded, Failed, Moved, Scheduled, DeadLettered, Dropped,
	Alerted, Breaker, Rejected, Duplicate, Redelivered, Lost, Summary, Phase, Received,
	ChannelClosed, Refused, Stranded, Mailed}

// Fate is a task's final state, carried only by Summary events.
type Fate string

// The fates a Summary event can carry.
const (
	FateDone    Fate = "done"    // processed successfully
	FateDead    Fate = "dead"    // parked in a dead-letter queue
	FateDropped Fate = "dropped" // discarded after its last failure
	FateLost    Fate = "lost"    // vanished (process death, a timer that never fired)
	FatePending Fate = "pending" // still somewhere in the system when the run ended
	// FateStranded: in a queue nothing consumes or empties; only a person
	// can move it on (a stranded event said where).
	FateStranded Fate = "stranded"
	// FateRefused: the broker refused the publish; no queue holds it and
	// only the publisher knows (a refused event said why).
	FateRefused Fate = "refused"
)

// Place is where in its destination queue (To) a moved or scheduled task
// lands. The zero value is the tail: where every publish goes, and where
// an in-memory requeue (inmem.Queue.Requeue, Q01's fast retry) puts a
// task. Only a broker's requeue of a delivery can put it ahead
// (rabbit.RequeueAt says which queues and versions do).
type Place string

// The places a task can land at in a queue.
const (
	AtTail Place = ""     // behind every message waiting there: a publish, an in-memory requeue
	AtHead Place = "head" // ahead of every message waiting there: the next one handed out
)

// Backend names where a lesson runs.
type Backend string

// The two backends.
const (
	InMem  Backend = "inmem"  // Go channels and goroutines in this process
	Rabbit Backend = "rabbit" // a real RabbitMQ broker
)

// Event is one thing that happened during a lesson. Its JSON form is the
// public contract of `qlab run N --json`: one object per line, fields as
// tagged here, empty optional fields omitted. Seq, TMs, Lesson and Backend
// are stamped by the Stream; emitters fill in the rest. Via, on a
// scheduled event, names the wait queue the task sits out its delay in
// (on the broker a TTL queue; in memory the one a timer stands for).
// Place, on a moved or scheduled event, is where in To the task lands;
// omitted, it is the tail.
type Event struct {
	Seq     int     `json:"seq"`
	TMs     int64   `json:"t_ms"`
	Lesson  string  `json:"lesson"`
	Backend Backend `json:"backend"`
	Kind    Kind    `json:"kind"`
	Task    string  `json:"task,omitempty"`
	Queue   string  `json:"queue,omitempty"`
	To      string  `json:"to,omitempty"`
	Via     string  `json:"via,omitempty"`
	Place   Place   `json:"place,omitempty"`
	Actor   string  `json:"actor,omitempty"`
	Attempt int     `json:"attempt,omitempty"`
	DelayMs int64   `json:"delay_ms,omitempty"`
	Fate    Fate    `json:"fate,omitempty"`
	Note    string  `json:"note,omitempty"`
}

// Sink receives events in emission order. The Stream calls Emit from one
// goroutine at a time (a goroutine of the sink's own, never a worker's),
// so a Sink needs no locking of its own against the Stream; it must not
// call back into the Stream. Wrap a reader that may fall behind in
// Bounded.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

// Emit calls f(e).
func (f SinkFunc) Emit(e Event) { f(e) }

// Recorder is a Sink that keeps every event, for tests and renderers that
// need the whole run.
type Recorder struct{ Events []Event }

// Emit appends e.
func (r *Recorder) Emit(e Event) { r.Events = append(r.Events, e) }

package lab

import (
	"sync"
	"sync/atomic"
	"time"
)

// Bounded wraps a sink for a reader that may fall behind (a view, a remote
// client): the stream keeps at most Buffer events waiting for it, and
// drops what does not fit, counting it in Missed, rather than holding up
// a worker. Run's Result reports the count, and the views show it. A
// plain sink (the log, JSON lines) misses nothing: its queue grows
// instead, up to backlogLimit events, and then its emitters wait.
// Stream.Finish waits until every sink has what was queued for it, so a
// Bounded sink's Emit must return once its reader is gone (it selects on
// the reader's context).
type Bounded struct {
	Sink
	Buffer int // events that may wait for the reader; at least 1
	missed atomic.Int64
}

// NewBounded wraps s with a buffer of n events (at least 1).
func NewBounded(s Sink, n int) *Bounded { return &Bounded{Sink: s, Buffer: max(n, 1)} }

// Missed is how many events the reader lost to a full buffer.
func (b *Bounded) Missed() int { return int(b.missed.Load()) }

// Inline is a sink the stream calls in the emitting goroutine, in Seq
// order but outside the Stream's lock: a recorder, whose reader mid-run
// then sees every event emitted so far, or a test that must act before the
// run goes on (it holds up the emitter for as long as it takes: nothing
// else should be Inline).
type Inline interface {
	Sink
	// Inline marks the sink as one the emitter calls itself.
	Inline()
}

// Inline makes Recorder an Inline sink.
func (r *Recorder) Inline() {}

// outbox holds the events on their way to one sink, in Seq order, and
// delivers them from a goroutine of its own that runs only while some are
// waiting: a sink never runs under the Stream's lock, and a slow one
// delays nobody but itself. The queue is guarded by the Stream's own lock,
// which every push holds already: a push is an append, no second lock,
// and the goroutine takes the lock once a batch.
//
// The goroutine starts drainDelay after the first event of a quiet spell,
// or at once when the queue nears its limit (startAt) or the Stream
// flushes: a busy run starts one for every several hundred events, not
// for each of its batches (each start wakes an idle core), and a log
// line is at most a millisecond late.
type outbox struct {
	sink    Sink
	bounded *Bounded    // nil for a plain sink
	mu      *sync.Mutex // the Stream's
	drains  *pending    // the Stream's: deliveries under way

	// Guarded by mu. queue and spare swap roles with each batch and
	// outlive the goroutine, so a steady run allocates no array.
	queue   []Event
	spare   []Event // the array of the batch in hand, reused for the next queue
	inHand  int     // events taken by the goroutine, not yet all handed over
	running bool
	room    chan struct{} // closed when the goroutine takes a full queue (room)
	armed   bool          // timer is set to start the goroutine
	timer   *time.Timer   // made at the first arming, reset at each one after
}

// drainDelay is how long the first event of a quiet spell waits for its
// sink's goroutine to start, so that the events after it share the start.
const drainDelay = time.Millisecond

// backlogLimit is how many events a plain sink's queue holds before the
// next emitter waits for the sink's goroutine to take them. A sink that
// keeps up never sees it; one that falls far behind (a slow terminal,
// a run of 100,000 tasks) slows the emitters down to its own pace rather
// than hold the whole run in memory, and a stuck one holds them until it
// reads again, as a blocked stdout would. A sink holds at most twice the
// limit (a full queue, and the batch in its hands): 1024 events are about
// 200 KB.
const backlogLimit = 1024

// full returns nil while o has room, else a channel that is closed once
// its goroutine has taken the queue. A Bounded sink is never full: it
// drops instead. The caller holds o.mu.
func (o *outbox) full() <-chan struct{} {
	if o.bounded != nil || len(o.queue) < backlogLimit {
		return nil
	}
	if o.room == nil {
		o.room = make(chan struct{})
	}
	return o.room
}

func newOutbox(s Sink, mu *sync.Mutex, drains *pending) *outbox {
	o := &outbox{sink: s, mu: mu, drains: drains}
	if b, ok := s.(*Bounded); ok {
		o.bounded = b
	}
	return o
}

// push queues *e and, if no delivering goroutine runs, starts one once
// the queue holds startAt events, or else arms the timer that starts it
// drainDelay later. The caller holds o.mu, so pushes keep Seq order. A
// Bounded sink's events in the queue and in the goroutine's hands never
// exceed its Buffer.
func (o *outbox) push(e *Event) {
	if o.bounded != nil && len(o.queue)+o.inHand >= o.bounded.Buffer {
		o.bounded.missed.Add(1)
		return
	}
	o.queue = append(o.queue, *e)
	switch {
	case o.running:
	case len(o.queue) >= o.startAt():
		o.start()
	case o.armed:
	case o.timer == nil:
		o.armed = true
		o.timer = time.AfterFunc(drainDelay, o.fire)
	default:
		o.armed = true
		o.timer.Reset(drainDelay)
	}
}

// startAt is the queue length at which a push starts the goroutine at
// once: three quarters of the backlog limit (half a Bounded sink's
// Buffer), so it runs before emitters would wait or events be dropped.
func (o *outbox) startAt() int {
	if o.bounded != nil {
		return max(o.bounded.Buffer/2, 1)
	}
	return backlogLimit * 3 / 4
}

// fire is the timer's, in a goroutine of the timer's own, which becomes
// the delivering goroutine unless a push or a flush started one meanwhile.
func (o *outbox) fire() {
	o.mu.Lock()
	o.armed = false
	if o.running || len(o.queue) == 0 {
		o.mu.Unlock()
		return
	}
	o.running = true
	o.drains.add()
	o.mu.Unlock()
	defer o.drains.done()
	o.drain()
}

// kick starts the goroutine if events wait for it and none runs (a
// flush: it does not wait for the timer). The caller holds o.mu.
func (o *outbox) kick() {
	if !o.running && len(o.queue) > 0 {
		o.start()
	}
}

// start starts the delivering goroutine, counted in drains, which Finish
// and Flush wait for, and disarms the timer. The caller holds o.mu.
func (o *outbox) start() {
	if o.armed && o.timer.Stop() {
		o.armed = false // else fire is under way: it finds the goroutine running
	}
	o.running = true
	o.drains.add()
	go func() {
		defer o.drains.done()
		o.drain()
	}()
}

// drain takes what is queued, in one batch, hands it over in order, and
// again, until nothing is queued; then it ends.
func (o *outbox) drain() {
	var batch []Event
	for {
		o.mu.Lock()
		if batch != nil {
			o.spare = batch[:0] // its stale events are overwritten, not cleared: at most backlogLimit of them
		}
		o.inHand = 0
		if len(o.queue) == 0 {
			o.running = false
			o.mu.Unlock()
			return
		}
		batch, o.queue, o.spare = o.queue, o.spare, nil
		o.inHand = len(batch)
		if o.room != nil {
			close(o.room)
			o.room = nil
		}
		o.mu.Unlock()
		for i := range batch {
			o.sink.Emit(batch[i])
		}
	}
}

// pending counts deliveries under way and lets a caller wait until none
// is; unlike a WaitGroup, a wait may overlap new ones starting.
type pending struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond
}

func (p *pending) add() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
}

func (p *pending) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n--
	if p.n == 0 && p.zero != nil {
		p.zero.Broadcast()
	}
}

// wait returns once no delivery is under way.
func (p *pending) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.zero == nil {
		p.zero = sync.NewCond(&p.mu)
	}
	for p.n > 0 {
		p.zero.Wait()
	}
}

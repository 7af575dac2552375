package lab

import (
	"sync"
	"sync/atomic"
)

// Bounded wraps a sink for a reader that may fall behind (a view, a remote
// client): the stream keeps at most Buffer events waiting for it, and
// drops what does not fit, counting it in Missed, rather than holding up
// a worker. Run's Result reports the count, and the views show it. A
// plain sink (the log, JSON lines) misses nothing: its queue grows
// instead. Stream.Finish waits until every sink has what was queued for
// it, so a Bounded sink's Emit must return once its reader is gone (it
// selects on the reader's context).
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
// delays nobody but itself.
type outbox struct {
	sink    Sink
	bounded *Bounded // nil for a plain sink

	mu      sync.Mutex
	queue   []Event
	running bool
}

func newOutbox(s Sink) *outbox {
	o := &outbox{sink: s}
	if b, ok := s.(*Bounded); ok {
		o.bounded = b
	}
	return o
}

// push queues e (the caller holds the Stream's lock, so pushes keep Seq
// order) and starts the delivering goroutine if none runs, counted in
// drains, which Finish and Flush wait for.
func (o *outbox) push(e Event, drains *pending) {
	o.mu.Lock()
	if o.bounded != nil && len(o.queue) >= o.bounded.Buffer {
		o.mu.Unlock()
		o.bounded.missed.Add(1)
		return
	}
	o.queue = append(o.queue, e)
	start := !o.running
	o.running = true
	o.mu.Unlock()
	if !start {
		return
	}
	drains.add()
	go func() {
		defer drains.done()
		o.drain()
	}()
}

// drain delivers the queue, oldest first, until it is empty, then ends.
// It takes one event at a time, so a Bounded sink holds at most its Buffer
// and the event in hand.
func (o *outbox) drain() {
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			o.queue = nil // let a long queue's array go
			o.running = false
			o.mu.Unlock()
			return
		}
		e := o.queue[0]
		o.queue = o.queue[1:]
		o.mu.Unlock()
		o.sink.Emit(e)
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

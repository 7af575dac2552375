// Package breaker is a circuit breaker that behaves as Node's opossum v10
// does (the breaker the NestJS email service configures), written in the
// style of sony/gobreaker: one state machine in one file.
//
// A Breaker wraps calls to a service that may go down. Every call it is
// asked to make counts in a rolling window of time buckets as a fire,
// including the calls it refuses. While closed it runs every call, each cut
// off at Timeout. When a call fails and the window holds at least
// VolumeThreshold fires of which more than ErrorThresholdPercentage per
// cent failed, it opens: calls fail fast with ErrOpen. A timer moves it to
// half-open ResetTimeout later; the first call then goes through as a
// trial, and while it runs the others fail fast. Any success while
// half-open closes it; any failure opens it again. Closing does not clear
// the window.
//
// Where opossum and gobreaker differ and gobreaker's way is safer, a
// Settings field picks gobreaker's way explicitly (IgnoreStaleOutcomes);
// the default is opossum's. Line references in comments are to opossum
// v10.0.0, lib/circuit.js and lib/status.js.
//
// Time comes from a Clock, never from a global, so a lesson can run the
// breaker in lesson time (see LessonClock) and a test can step it by hand.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queuelab/qlab/lab"
)

// State is where the breaker is in its cycle.
type State int

// The three states. Their String values ("closed", "open", "half_open") are
// the note of `breaker` events in the JSON event contract.
const (
	StateClosed   State = iota // calls run; outcomes are counted
	StateOpen                  // calls fail fast with ErrOpen
	StateHalfOpen              // one trial call runs; others get ErrTooManyRequests
)

// String returns "closed", "open" or "half_open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateOpen:
		return "open"
	case StateHalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Errors Execute returns instead of, or besides, the call's own error.
var (
	// ErrOpen: the breaker is open and the call was not made (opossum's
	// EOPENBREAKER, circuit.js:711).
	ErrOpen = errors.New("circuit breaker is open")
	// ErrTooManyRequests: the breaker is half-open and its one trial call
	// is already in flight, so this call was not made. It wraps ErrOpen:
	// opossum gives both cases the same EOPENBREAKER.
	ErrTooManyRequests = fmt.Errorf("%w (half-open: trial call already in flight)", ErrOpen)
	// ErrTimeout: the call ran longer than Timeout. Execute returns it at
	// the deadline and counts a failure (opossum's ETIMEDOUT).
	ErrTimeout = errors.New("circuit breaker: call timed out")
	// ErrShutdown: Close was called; no call is made any more (opossum's
	// ESHUTDOWN).
	ErrShutdown = errors.New("circuit breaker is shut down")
)

// Timer is a pending call a Clock will make; Stop cancels it and reports
// whether it was still pending. *time.Timer is one.
type Timer interface{ Stop() bool }

// Clock is the breaker's source of time. Every duration in Settings is in
// this clock's time: Now reads it, AfterFunc runs f once d of it has
// passed (the reset timer and the per-call timeout).
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// realClock is wall-clock time.
type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// lessonClock reads a lab.Clock's lesson time as a time.Time.
type lessonClock struct{ c lab.Clock }

// lessonEpoch anchors lesson time; only differences between readings matter.
var lessonEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func (l lessonClock) Now() time.Time { return lessonEpoch.Add(l.c.Elapsed()) }
func (l lessonClock) AfterFunc(d time.Duration, f func()) Timer {
	return l.c.AfterFunc(d, f) // stands still while the lesson is paused
}

// LessonClock makes the breaker keep lesson time: its 10 s reset timeout is
// 10 s of lesson time, which at --speed 100 passes in 100 ms of real time,
// and transitions land at the same lesson-time stamps at any speed.
func LessonClock(c lab.Clock) Clock { return lessonClock{c} }

// Settings configures a Breaker. The zero value of every field picks the
// default given in its comment (opossum's defaults, circuit.js:179-184,238).
type Settings struct {
	// Name identifies the breaker to its owner (logs, events); the breaker
	// only keeps it. Default "".
	Name string
	// Timeout is the longest one call may run. At the deadline Execute
	// returns ErrTimeout and counts a failure without waiting for the call
	// (circuit.js:733-754): the call runs on its own goroutine, its context
	// is cancelled, and whatever it returns later is ignored. Default 10 s;
	// negative: no timeout, the call runs on the caller's goroutine.
	Timeout time.Duration
	// ErrorThresholdPercentage: a failure opens the breaker when more than
	// this share of the fires in the rolling window failed. Default 50.
	ErrorThresholdPercentage float64
	// VolumeThreshold is the least number of fires (calls made or refused)
	// the rolling window must hold before a failure may open the breaker.
	// Default 0: no minimum.
	VolumeThreshold int
	// ResetTimeout is how long the breaker stays open before its timer
	// moves it to half-open. Default 30 s.
	ResetTimeout time.Duration
	// RollingWindow is how far back outcomes count (rollingCountTimeout).
	// Default 10 s.
	RollingWindow time.Duration
	// Buckets is how many slices the rolling window is cut into; outcomes
	// leave the window one whole bucket at a time (rollingCountBuckets).
	// Default 10.
	Buckets int
	// IgnoreStaleOutcomes picks gobreaker's way over opossum's for a call
	// that finishes after the breaker changed state since it was let in
	// (a slow call from before it opened, say). false (opossum): its
	// outcome counts like any other, so a stale success arriving while
	// half-open closes the breaker although the service may still be down.
	// true (gobreaker's generation check): it is not counted and moves
	// nothing, so only the trial call decides a half-open breaker. Default
	// false.
	IgnoreStaleOutcomes bool
	// Clock supplies the time. Default: wall-clock time.
	Clock Clock
	// OnStateChange, if set, is called on every transition, synchronously
	// and under the breaker's lock, so it must not call back into the
	// Breaker. A transition caused by a call runs on that call's goroutine
	// with its ctx; the reset timer's move to half-open runs on the timer's
	// goroutine with context.Background(). Default nil.
	OnStateChange func(ctx context.Context, from, to State)
}

// withDefaults returns s with every zero field replaced by its default.
func (s Settings) withDefaults() Settings {
	if s.Timeout == 0 {
		s.Timeout = 10 * time.Second
	}
	if s.ErrorThresholdPercentage == 0 {
		s.ErrorThresholdPercentage = 50
	}
	if s.ResetTimeout == 0 {
		s.ResetTimeout = 30 * time.Second
	}
	if s.RollingWindow == 0 {
		s.RollingWindow = 10 * time.Second
	}
	if s.Buckets <= 0 {
		s.Buckets = 10
	}
	if s.Clock == nil {
		s.Clock = realClock{}
	}
	return s
}

// Counts is what the rolling window holds (opossum's status.stats).
type Counts struct {
	Fires     int // every Execute while not shut down, refused ones too
	Successes int // calls that returned nil
	Failures  int // calls that failed, timed out or panicked
	Rejects   int // fires refused without a call (ErrOpen)
	Timeouts  int // failures that were timeouts
}

// add sums two counts.
func (c Counts) add(o Counts) Counts {
	return Counts{c.Fires + o.Fires, c.Successes + o.Successes, c.Failures + o.Failures,
		c.Rejects + o.Rejects, c.Timeouts + o.Timeouts}
}

// bucket holds the counts of one slice of the rolling window. id is the
// slice's number since the window's epoch, so a stale bucket is recognised
// (and reset) when the ring comes round to it again.
type bucket struct {
	id     int64
	counts Counts
}

// Breaker is a circuit breaker. Create it with New; safe for concurrent
// use. Close it when done, so a pending reset timer does not outlive it.
type Breaker struct {
	s     Settings
	width time.Duration // one bucket's share of the rolling window

	mu           sync.Mutex
	state        State
	generation   uint64    // bumped on every transition
	openedAt     time.Time // when the breaker last opened
	pendingClose bool      // half-open and the trial call not yet let in
	reset        Timer     // the reset timer while open, else nil
	shutdown     bool
	epoch        time.Time // bucket ids count from here
	buckets      []bucket
}

// New returns a closed Breaker configured by s (zero fields get defaults).
func New(s Settings) *Breaker {
	s = s.withDefaults()
	width := s.RollingWindow / time.Duration(s.Buckets)
	if width <= 0 {
		width = 1
	}
	b := &Breaker{s: s, width: width, buckets: make([]bucket, s.Buckets)}
	b.epoch = s.Clock.Now()
	for i := range b.buckets {
		b.buckets[i].id = -1
	}
	return b
}

// Settings returns the breaker's settings with defaults filled in.
func (b *Breaker) Settings() Settings { return b.s }

// State returns the current state. An open breaker whose ResetTimeout has
// passed reads half-open even if its timer has not run yet.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(context.Background(), b.s.Clock.Now())
	return b.state
}

// Counts returns what the rolling window holds now.
func (b *Breaker) Counts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.window(b.s.Clock.Now())
}

// Close shuts the breaker down (opossum's shutdown, circuit.js:440): it
// stops the reset timer, so nothing of the breaker outlives its use, and
// every later Execute returns ErrShutdown. Calls in flight finish.
func (b *Breaker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shutdown = true
	b.stopReset()
}

// Execute runs fn through the breaker. It counts a fire, then returns
// ErrOpen (or ErrTooManyRequests, which wraps it) without calling fn when
// the breaker says no. Otherwise it calls fn with a context that is
// cancelled at Timeout, and returns fn's error, or ErrTimeout at the
// deadline. Any non-nil error is a failure. If fn panics, the panic is
// counted as a failure and Execute panics again with the same value, as
// gobreaker does (a panic after the deadline is re-raised on fn's own
// goroutine: nobody is left to hand it to).
func (b *Breaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	gen, err := b.before(ctx)
	if err != nil {
		return err
	}
	out := b.call(ctx, fn)
	b.after(ctx, gen, out)
	if out.panicked {
		panic(out.value)
	}
	return out.err
}

// before counts the fire and decides whether the call may run; it returns
// the generation the call runs in (circuit.js:656,711-724).
func (b *Breaker) before(ctx context.Context) (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shutdown {
		return 0, ErrShutdown
	}
	now := b.s.Clock.Now()
	b.due(ctx, now)
	b.count(now, Counts{Fires: 1})
	switch {
	case b.state == StateOpen:
		b.count(now, Counts{Rejects: 1})
		return 0, ErrOpen
	case b.state == StateHalfOpen && !b.pendingClose:
		b.count(now, Counts{Rejects: 1})
		return 0, ErrTooManyRequests
	}
	b.pendingClose = false // the trial, if half-open
	return b.generation, nil
}

// after records the outcome of a call let in during generation gen.
func (b *Breaker) after(ctx context.Context, gen uint64, out outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.s.Clock.Now()
	b.due(ctx, now)
	if b.s.IgnoreStaleOutcomes && gen != b.generation {
		return // gobreaker: the state changed while the call ran
	}
	if out.err == nil {
		b.count(now, Counts{Successes: 1})
		if b.state == StateHalfOpen { // any success closes (circuit.js:349-353)
			b.setState(ctx, StateClosed, now)
		}
		return
	}
	b.count(now, Counts{Failures: 1, Timeouts: out.timeouts()})
	if b.shouldOpen(now) {
		b.setState(ctx, StateOpen, now)
	}
}

// shouldOpen is opossum's fail() (circuit.js:981-996): half-open, any
// failure opens; closed, it opens with enough fires in the window and more
// than the threshold share of them failed; open, it stays as it is.
func (b *Breaker) shouldOpen(now time.Time) bool {
	switch b.state {
	case StateHalfOpen:
		return true
	case StateOpen:
		return false
	}
	c := b.window(now)
	if c.Fires < b.s.VolumeThreshold {
		return false
	}
	return float64(c.Failures)*100 > b.s.ErrorThresholdPercentage*float64(c.Fires)
}

// setState enters state to and reports it to OnStateChange. Opening
// starts the reset timer (circuit.js:315-324,348); closing stops it
// (circuit.js:398-401) and keeps the window: opossum's close only marks
// the current bucket (status.js:182).
func (b *Breaker) setState(ctx context.Context, to State, now time.Time) {
	from := b.state
	b.state = to
	b.generation++
	b.pendingClose = to == StateHalfOpen
	b.stopReset()
	if to == StateOpen {
		b.openedAt = now
		gen := b.generation
		b.reset = b.s.Clock.AfterFunc(b.s.ResetTimeout, func() { b.resetFired(gen) })
	}
	if b.s.OnStateChange != nil {
		b.s.OnStateChange(ctx, from, to)
	}
}

// resetFired is the reset timer: the breaker opened in generation gen goes
// half-open, unless something moved it meanwhile.
func (b *Breaker) resetFired(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shutdown || b.state != StateOpen || b.generation != gen {
		return
	}
	b.setState(context.Background(), StateHalfOpen, b.s.Clock.Now())
}

// due moves an open breaker whose ResetTimeout has passed to half-open,
// as its timer is about to. The timer is opossum's mechanism; this check
// only settles a call that lands on the very instant the timer is due:
// it finds the breaker half-open whichever goroutine runs first, so a run
// under testing/synctest is deterministic.
func (b *Breaker) due(ctx context.Context, now time.Time) {
	if b.state == StateOpen && !b.shutdown && !now.Before(b.openedAt.Add(b.s.ResetTimeout)) {
		b.setState(ctx, StateHalfOpen, now)
	}
}

// stopReset cancels a pending reset timer.
func (b *Breaker) stopReset() {
	if b.reset != nil {
		b.reset.Stop()
		b.reset = nil
	}
}

// bucketID is the number of the window slice that contains now.
func (b *Breaker) bucketID(now time.Time) int64 {
	d := now.Sub(b.epoch)
	if d < 0 {
		d = 0
	}
	return int64(d / b.width)
}

// count adds c to the bucket of now (status.js:169 increments window[0]).
func (b *Breaker) count(now time.Time, c Counts) {
	id := b.bucketID(now)
	bk := &b.buckets[id%int64(len(b.buckets))]
	if bk.id != id {
		*bk = bucket{id: id}
	}
	bk.counts = bk.counts.add(c)
}

// window sums the buckets still inside the rolling window at now.
func (b *Breaker) window(now time.Time) Counts {
	cur := b.bucketID(now)
	var c Counts
	for _, bk := range b.buckets {
		if bk.id <= cur && bk.id > cur-int64(len(b.buckets)) {
			c = c.add(bk.counts)
		}
	}
	return c
}

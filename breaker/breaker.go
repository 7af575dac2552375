// Package breaker is a circuit breaker with the semantics of Node's opossum
// (the breaker seed 000 configures), written in the style of sony/gobreaker:
// one state machine in one file.
//
// A Breaker wraps calls to a service that may go down. While it is closed it
// runs every call, with a per-call timeout, and keeps the outcomes in a
// rolling window of time buckets. When a call fails and the window holds at
// least VolumeThreshold calls of which more than ErrorThresholdPercentage
// per cent failed, it opens: calls fail fast with ErrOpen and the service
// gets a rest. ResetTimeout later it lets exactly one trial call through
// (half-open): success closes it, failure opens it for another ResetTimeout.
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

// Errors Execute returns instead of running the call.
var (
	// ErrOpen: the breaker is open and the call was not made.
	ErrOpen = errors.New("circuit breaker is open")
	// ErrTooManyRequests: the breaker is half-open and its one trial call
	// is already in flight, so this call was not made.
	ErrTooManyRequests = errors.New("circuit breaker is half-open: trial call already in flight")
	// ErrTimeout wraps the outcome of a call that ran longer than Timeout.
	// The call counts as a failure.
	ErrTimeout = errors.New("circuit breaker: call timed out")
)

// Clock is the breaker's source of time. Every duration in Settings is in
// this clock's time; Real converts such a duration into the real time a
// timer has to wait (the per-call timeout is a real context deadline).
type Clock interface {
	Now() time.Time
	Real(d time.Duration) time.Duration
}

// realClock is wall-clock time, where a duration is its own real duration.
type realClock struct{}

func (realClock) Now() time.Time                     { return time.Now() }
func (realClock) Real(d time.Duration) time.Duration { return d }

// lessonClock reads a lab.Clock's lesson time as a time.Time.
type lessonClock struct{ c lab.Clock }

// lessonEpoch anchors lesson time; only differences between readings matter.
var lessonEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func (l lessonClock) Now() time.Time                     { return lessonEpoch.Add(l.c.Elapsed()) }
func (l lessonClock) Real(d time.Duration) time.Duration { return l.c.Real(d) }

// LessonClock makes the breaker keep lesson time: its 10 s reset timeout is
// 10 s of lesson time, which at --speed 100 passes in 100 ms of real time,
// and transitions land at the same lesson-time stamps at any speed.
func LessonClock(c lab.Clock) Clock { return lessonClock{c} }

// Settings configures a Breaker. The zero value of every field picks the
// default given in its comment (opossum's defaults, except where noted).
type Settings struct {
	// Name identifies the breaker to its owner (logs, events); the breaker
	// only keeps it. Default "".
	Name string
	// Timeout is the longest one call may run; a slower call counts as a
	// failure and Execute returns ErrTimeout. The call's context carries
	// the deadline, and Execute waits for the call to return, so a call
	// should honour its context. Default 10 s; negative: no timeout.
	Timeout time.Duration
	// ErrorThresholdPercentage: the breaker opens when more than this share
	// of the calls in the rolling window failed. Default 50.
	ErrorThresholdPercentage float64
	// VolumeThreshold is the least number of calls the rolling window must
	// hold before the breaker may open. Default 0: no minimum.
	VolumeThreshold int
	// ResetTimeout is how long the breaker stays open before it lets one
	// trial call through. Default 30 s.
	ResetTimeout time.Duration
	// RollingWindow is how far back outcomes count. Default 10 s.
	RollingWindow time.Duration
	// Buckets is how many slices the rolling window is cut into; outcomes
	// leave the window one whole bucket at a time. Default 10.
	Buckets int
	// Clock supplies the time. Default: wall-clock time.
	Clock Clock
	// OnStateChange, if set, is called on every transition, synchronously,
	// on the goroutine of the Execute call that caused it and with ctx
	// being that call's context. It must not call back into the Breaker.
	// Default nil.
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

// Counts is what the rolling window holds: calls made while closed that
// finished inside the window.
type Counts struct {
	Successes, Failures int
}

// Total is Successes + Failures.
func (c Counts) Total() int { return c.Successes + c.Failures }

// bucket holds the outcomes of one slice of the rolling window. id is the
// slice's number since the window's epoch, so a stale bucket is recognised
// (and reset) when the ring comes round to it again.
type bucket struct {
	id     int64
	counts Counts
}

// Breaker is a circuit breaker. Create it with New; safe for concurrent use.
type Breaker struct {
	s     Settings
	width time.Duration // one bucket's share of the rolling window

	mu         sync.Mutex
	state      State
	generation uint64    // bumped on every transition
	openedAt   time.Time // when the breaker last opened
	trial      bool      // half-open: the trial call is in flight
	epoch      time.Time // bucket ids count from here
	buckets    []bucket
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
	b.clearWindow()
	return b
}

// Settings returns the breaker's settings with defaults filled in.
func (b *Breaker) Settings() Settings { return b.s }

// State returns the current state. Like a call, it moves an open breaker
// whose ResetTimeout has passed to half-open (reporting the transition
// with a background context).
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(context.Background(), b.s.Clock.Now())
	return b.state
}

// Counts returns what the rolling window holds now.
func (b *Breaker) Counts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.window(b.s.Clock.Now())
}

// Execute runs fn through the breaker. It returns ErrOpen or
// ErrTooManyRequests without calling fn when the breaker says no;
// otherwise it calls fn with a context bounded by Timeout, records the
// outcome (any non-nil error is a failure) and returns fn's error, wrapped
// in ErrTimeout if the call ran out of time. An outcome that arrives after
// the breaker changed state (a slow call from an older generation) is not
// counted.
func (b *Breaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	gen, err := b.before(ctx)
	if err != nil {
		return err
	}
	err = b.call(ctx, fn)
	b.after(ctx, gen, err)
	return err
}

// call runs fn under the per-call timeout.
func (b *Breaker) call(ctx context.Context, fn func(context.Context) error) error {
	if b.s.Timeout < 0 {
		return fn(ctx)
	}
	tctx, cancel := context.WithTimeout(ctx, b.s.Clock.Real(b.s.Timeout))
	defer cancel()
	err := fn(tctx)
	if errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		if err == nil {
			return ErrTimeout
		}
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// before decides whether a call may run and returns the generation it runs
// in.
func (b *Breaker) before(ctx context.Context) (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(ctx, b.s.Clock.Now())
	switch b.state {
	case StateOpen:
		return 0, ErrOpen
	case StateHalfOpen:
		if b.trial {
			return 0, ErrTooManyRequests
		}
		b.trial = true
	}
	return b.generation, nil
}

// after records the outcome of a call admitted in generation gen.
func (b *Breaker) after(ctx context.Context, gen uint64, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.s.Clock.Now()
	b.advance(ctx, now)
	if gen != b.generation {
		return // the state changed while the call ran: its outcome is stale
	}
	switch b.state {
	case StateClosed:
		b.record(now, err == nil)
		if err != nil && b.shouldTrip(now) {
			b.setState(ctx, StateOpen, now)
		}
	case StateHalfOpen:
		if err == nil {
			b.setState(ctx, StateClosed, now)
		} else {
			b.setState(ctx, StateOpen, now)
		}
	}
}

// advance moves an open breaker to half-open once ResetTimeout has passed.
func (b *Breaker) advance(ctx context.Context, now time.Time) {
	if b.state == StateOpen && !now.Before(b.openedAt.Add(b.s.ResetTimeout)) {
		b.setState(ctx, StateHalfOpen, now)
	}
}

// shouldTrip: enough calls in the window, and more than the threshold
// share of them failed.
func (b *Breaker) shouldTrip(now time.Time) bool {
	c := b.window(now)
	total := c.Total()
	if total == 0 || total < b.s.VolumeThreshold {
		return false
	}
	return float64(c.Failures)*100 > b.s.ErrorThresholdPercentage*float64(total)
}

// setState enters state to: a new generation, a clean slate for it, and a
// report to OnStateChange.
func (b *Breaker) setState(ctx context.Context, to State, now time.Time) {
	from := b.state
	b.state = to
	b.generation++
	b.trial = false
	switch to {
	case StateOpen:
		b.openedAt = now
	case StateClosed:
		b.clearWindow()
	}
	if b.s.OnStateChange != nil {
		b.s.OnStateChange(ctx, from, to)
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

// record counts one outcome in the bucket of now.
func (b *Breaker) record(now time.Time, ok bool) {
	id := b.bucketID(now)
	bk := &b.buckets[id%int64(len(b.buckets))]
	if bk.id != id {
		*bk = bucket{id: id}
	}
	if ok {
		bk.counts.Successes++
	} else {
		bk.counts.Failures++
	}
}

// window sums the buckets that are still inside the rolling window at now.
func (b *Breaker) window(now time.Time) Counts {
	cur := b.bucketID(now)
	var c Counts
	for _, bk := range b.buckets {
		if bk.id <= cur && bk.id > cur-int64(len(b.buckets)) {
			c.Successes += bk.counts.Successes
			c.Failures += bk.counts.Failures
		}
	}
	return c
}

// clearWindow forgets every outcome.
func (b *Breaker) clearWindow() {
	for i := range b.buckets {
		b.buckets[i] = bucket{id: -1}
	}
}

package lab

import (
	"context"
	"math"
	"sync"
	"time"
)

// Clock converts between lesson time and real time. Lessons speak in
// lesson time (the seed's 1 s and 2 s); at Speed 100 a 1 s wait really takes
// 10 ms, yet events are stamped 1000 ms apart, so a transcript reads the
// same at any speed.
//
// A Clock is a small value copied into everything that keeps time. A clock
// made with WithPause shares a *Pause with its copies: while the pause is
// held, lesson time stands still (Elapsed does not move, and Wait, Sleep
// and AfterFunc are stretched by the held span), so a student who pauses
// the TUI reads the same gaps afterwards. Without a Pause nothing changes
// and nothing is paid.
type Clock struct {
	speed float64
	start time.Time
	pause *Pause        // nil: lesson time never stands still
	held0 time.Duration // the pause's held total when the clock started
}

// NewClock starts a lesson clock now. speed must be > 0; callers validate
// user input before they get here, so a bad speed panics as a programming
// error.
func NewClock(speed float64) Clock {
	if !(speed > 0) || math.IsInf(speed, 0) {
		panic("lab: clock speed must be a positive finite number")
	}
	return Clock{speed: speed, start: time.Now()}
}

// WithPause returns the clock governed by p: lesson time stands still
// while p is held. A nil p returns c unchanged. Spans p was held before
// this call do not count.
func (c Clock) WithPause(p *Pause) Clock {
	c.pause = p
	if p != nil {
		c.held0 = p.heldBy(time.Now())
	}
	return c
}

// Speed is the factor lesson time runs faster than real time.
func (c Clock) Speed() float64 { return c.speed }

// Real returns how long lesson duration d takes in real time.
func (c Clock) Real(d time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d) / c.speed))
}

// Lesson returns the lesson duration that real duration d stands for.
func (c Clock) Lesson(d time.Duration) time.Duration {
	if c.speed == 1 {
		return d // the default speed: exact, and skips float rounding on every event stamp
	}
	return time.Duration(math.Round(float64(d) * c.speed))
}

// Elapsed is the lesson time since the clock started, not counting the
// spans its pause was held.
func (c Clock) Elapsed() time.Duration {
	if c.pause == nil {
		return c.Lesson(time.Since(c.start))
	}
	return c.Lesson(c.running(time.Now()))
}

// running is the real time since the clock started that was not held.
func (c Clock) running(now time.Time) time.Duration {
	return now.Sub(c.start) - (c.pause.heldBy(now) - c.held0)
}

// Sleep blocks for lesson duration d.
func (c Clock) Sleep(d time.Duration) {
	if c.pause == nil {
		time.Sleep(c.Real(d))
		return
	}
	_ = c.Wait(context.Background(), d)
}

// Wait blocks for lesson duration d or until ctx is done, and returns
// ctx's error in the second case. A d of zero or less returns at once.
func (c Clock) Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if c.pause != nil {
		return c.waitPaused(ctx, d)
	}
	t := time.NewTimer(c.Real(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitPaused is Wait for a clock with a pause: it waits until d of
// unheld real time has passed, sitting out every held span.
func (c Clock) waitPaused(ctx context.Context, d time.Duration) error {
	due := c.running(time.Now()) + c.Real(d)
	t := time.NewTimer(c.Real(d))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		for {
			resumed, held := c.pause.resumed()
			if !held {
				break
			}
			select {
			case <-resumed:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		left := due - c.running(time.Now())
		if left <= 0 {
			return nil
		}
		t.Reset(left)
	}
}

// AfterFunc runs f after lesson duration d, like time.AfterFunc. With a
// pause, the timer sits out every span the pause is held (it checks back
// every pausePoll while held), and the returned timer's Stop still
// cancels it at any point.
func (c Clock) AfterFunc(d time.Duration, f func()) *time.Timer {
	if c.pause == nil {
		return time.AfterFunc(c.Real(d), f)
	}
	due := c.running(time.Now()) + c.Real(d)
	var t *time.Timer
	ready := make(chan struct{})
	t = time.AfterFunc(c.Real(d), func() {
		<-ready // t is set
		if _, held := c.pause.resumed(); held {
			t.Reset(pausePoll) // still armed, so a Stop meanwhile cancels f
			return
		}
		if left := due - c.running(time.Now()); left > 0 {
			t.Reset(left)
			return
		}
		f()
	})
	close(ready)
	return t
}

// pausePoll is how often a timer that came due while its clock is held
// checks whether the pause is over. A timer the caller can Stop must stay
// armed, so it polls rather than parks.
const pausePoll = 20 * time.Millisecond

// Pause holds the lesson time of every clock made with WithPause(p). The
// zero value is not held; Hold and Release may be called from any
// goroutine, and repeating one is a no-op.
type Pause struct {
	mu    sync.Mutex
	since time.Time     // when the current hold began; zero while not held
	total time.Duration // length of the holds that ended
	done  chan struct{} // closed when the current hold ends
}

// Hold stops lesson time until Release.
func (p *Pause) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since.IsZero() {
		p.since = time.Now()
		p.done = make(chan struct{})
	}
}

// Release lets lesson time run again.
func (p *Pause) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.since.IsZero() {
		p.total += time.Since(p.since)
		p.since = time.Time{}
		close(p.done)
	}
}

// Held reports whether the pause is held now.
func (p *Pause) Held() bool {
	_, held := p.resumed()
	return held
}

// heldBy is how long the pause was held up to now.
func (p *Pause) heldBy(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since.IsZero() {
		return p.total
	}
	return p.total + now.Sub(p.since)
}

// resumed returns, while held, a channel closed when the hold ends.
func (p *Pause) resumed() (<-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done, !p.since.IsZero()
}

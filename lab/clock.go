package lab

import (
	"context"
	"math"
	"time"
)

// Clock converts between lesson time and real time. Lessons speak in
// lesson time (the seed's 1 s and 2 s); at Speed 100 a 1 s wait really takes
// 10 ms, yet events are stamped 1000 ms apart, so a transcript reads the
// same at any speed.
type Clock struct {
	speed float64
	start time.Time
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

// Elapsed is the lesson time since the clock started.
func (c Clock) Elapsed() time.Duration { return c.Lesson(time.Since(c.start)) }

// Sleep blocks for lesson duration d.
func (c Clock) Sleep(d time.Duration) { time.Sleep(c.Real(d)) }

// Wait blocks for lesson duration d or until ctx is done, and returns
// ctx's error in the second case. A d of zero or less returns at once.
func (c Clock) Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
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

// AfterFunc runs f after lesson duration d, like time.AfterFunc.
func (c Clock) AfterFunc(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(c.Real(d), f)
}

package lab

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClockScaling(t *testing.T) {
	for _, c := range []struct {
		speed      float64
		lesson     time.Duration
		real       time.Duration
		roundTrips bool
	}{
		{1, time.Second, time.Second, true},
		{10, time.Second, 100 * time.Millisecond, true},
		{100, 2 * time.Second, 20 * time.Millisecond, true},
		{0.5, time.Second, 2 * time.Second, true},
		{3, time.Nanosecond, 0, false}, // rounds to the nearest nanosecond
	} {
		clk := Clock{speed: c.speed}
		assert.Equal(t, c.real, clk.Real(c.lesson), "Real at speed %g", c.speed)
		if c.roundTrips {
			assert.Equal(t, c.lesson, clk.Lesson(c.real), "Lesson at speed %g", c.speed)
		}
	}
}

func TestNewClockRejectsBadSpeed(t *testing.T) {
	for _, s := range []float64{0, -1} {
		assert.Panics(t, func() { NewClock(s) }, "speed %g", s)
	}
}

// In fake time, Sleep and AfterFunc take exactly the scaled real time and
// Elapsed reports lesson time.
func TestClockSleepAndAfterFuncAreScaled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := NewClock(10)
		start := time.Now()
		clk.Sleep(time.Second)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Equal(t, time.Second, clk.Elapsed())

		fired := make(chan time.Duration, 1)
		clk.AfterFunc(2*time.Second, func() { fired <- clk.Elapsed() })
		assert.Equal(t, 3*time.Second, <-fired)
	})
}

func TestClockWaitIsLessonTimeAndHonoursCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewClock(10)
		start := time.Now()
		require.NoError(t, c.Wait(context.Background(), 2*time.Second))
		assert.Equal(t, 200*time.Millisecond, time.Since(start), "2 s of lesson time at speed 10")

		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		assert.ErrorIs(t, c.Wait(ctx, time.Hour), context.Canceled)
		assert.NoError(t, c.Wait(context.Background(), 0))
	})
}

// A Q07-like doubling backoff (1 s, then 2 s) reads the same gaps when
// the student pauses in the middle of a wait: lesson time stands still
// while the pause is held, and the timers sit the held span out.
func TestPauseHoldsLessonTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pause
		clk := NewClock(10).WithPause(&p)
		start := time.Now()
		stamps := make(chan time.Duration, 3)
		stamps <- clk.Elapsed()
		clk.AfterFunc(time.Second, func() {
			stamps <- clk.Elapsed()
			clk.AfterFunc(2*time.Second, func() { stamps <- clk.Elapsed() })
		})
		time.AfterFunc(150*time.Millisecond, p.Hold) // 0.5 s into the 2 s wait
		time.AfterFunc(150*time.Millisecond+7*time.Second, p.Release)

		a, b, c := <-stamps, <-stamps, <-stamps
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, []time.Duration{b - a, c - b}, "the gaps read 1 s and 2 s")
		assert.Equal(t, 300*time.Millisecond+7*time.Second, time.Since(start), "the real time includes the pause")
	})
}

func TestPausedElapsedStandsStillAndWaitIsStretched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pause
		clk := NewClock(1).WithPause(&p)
		time.Sleep(time.Second)
		p.Hold()
		p.Hold() // repeating is a no-op
		assert.True(t, p.Held())
		time.Sleep(time.Minute)
		assert.Equal(t, time.Second, clk.Elapsed(), "held: lesson time stands still")
		p.Release()
		p.Release()
		time.Sleep(time.Second)
		assert.Equal(t, 2*time.Second, clk.Elapsed())

		start := time.Now()
		time.AfterFunc(500*time.Millisecond, p.Hold)
		time.AfterFunc(3*time.Second, p.Release)
		require.NoError(t, clk.Wait(context.Background(), time.Second))
		assert.Equal(t, 3500*time.Millisecond, time.Since(start), "0.5 s, held 2.5 s, then the other 0.5 s")
		start = time.Now()
		time.AfterFunc(100*time.Millisecond, p.Hold)
		time.AfterFunc(time.Second, p.Release)
		clk.Sleep(200 * time.Millisecond)
		assert.Equal(t, 1100*time.Millisecond, time.Since(start), "Sleep sits out the hold too")

		p.Hold()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Hour, cancel)
		assert.ErrorIs(t, clk.Wait(ctx, time.Millisecond), context.Canceled, "a held wait still ends with its context")
		p.Release()
	})
}

// A timer that comes due while held stays armed: Stop still cancels it.
func TestPausedAfterFuncCanBeStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pause
		clk := NewClock(1).WithPause(&p)
		fired := false
		tm := clk.AfterFunc(time.Second, func() { fired = true })
		p.Hold()
		time.Sleep(10*time.Second + 5*time.Millisecond) // between two of its checks
		assert.True(t, tm.Stop(), "the timer is still armed while held")
		p.Release()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.False(t, fired)
	})
}

// Spans a pause was held before a clock joined it do not count.
func TestWithPauseIgnoresEarlierHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pause
		p.Hold()
		time.Sleep(time.Minute)
		p.Release()
		clk := NewClock(2).WithPause(&p)
		time.Sleep(time.Second)
		assert.Equal(t, 2*time.Second, clk.Elapsed())
		assert.Equal(t, NewClock(2), NewClock(2).WithPause(nil), "a nil pause changes nothing")
	})
}

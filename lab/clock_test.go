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

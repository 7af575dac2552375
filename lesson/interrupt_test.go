package lesson

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
)

// The interrupt counts from when the lesson arms it (its workers run), so
// a slow set-up at a high speed never makes it miss; and a lesson dies at
// most once, so a later run of a two-run lesson is left alone.
func TestInterruptCountsFromArmingAndFiresOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := &Env{Stream: lab.NewStream("q00", lab.InMem, lab.NewClock(40)), Options: Options{Interrupt: 2 * time.Second}}
		time.Sleep(100 * time.Millisecond) // set-up: 4 s of lesson time at 40x, past the interrupt

		var died atomic.Int32 // the timer's goroutine writes, this one reads
		die := func() { died.Add(1) }
		stop := env.InterruptAfter(die)
		time.Sleep(49 * time.Millisecond)
		assert.Zero(t, died.Load(), "2 s of lesson time is 50 ms at 40x: not yet")
		time.Sleep(2 * time.Millisecond)
		assert.Equal(t, int32(1), died.Load())
		env.mu.Lock()
		assert.True(t, env.interrupted, "the lesson knows it was interrupted")
		env.mu.Unlock()
		stop()

		second := env.InterruptAfter(die)
		time.Sleep(time.Second)
		assert.Equal(t, int32(1), died.Load(), "a lesson dies once")
		second()

		quiet := &Env{Stream: lab.NewStream("q00", lab.InMem, lab.NewClock(1))}
		quiet.InterruptAfter(die)()
		time.Sleep(time.Minute)
		assert.Equal(t, int32(1), died.Load(), "no Interrupt, no death")
	})
}

package lessons

import (
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
		env := &Env{Stream: lab.NewStream("q00", lab.InMem, lab.NewClock(40)), Interrupt: 2 * time.Second}
		time.Sleep(100 * time.Millisecond) // set-up: 4 s of lesson time at 40x, past the interrupt

		died := 0
		stop := env.interruptAfter(func() { died++ })
		time.Sleep(49 * time.Millisecond)
		assert.Zero(t, died, "2 s of lesson time is 50 ms at 40x: not yet")
		time.Sleep(2 * time.Millisecond)
		assert.Equal(t, 1, died)
		assert.True(t, env.interrupted)
		stop()

		second := env.interruptAfter(func() { died++ })
		time.Sleep(time.Second)
		assert.Equal(t, 1, died, "a lesson dies once")
		second()

		quiet := &Env{Stream: lab.NewStream("q00", lab.InMem, lab.NewClock(1))}
		quiet.interruptAfter(func() { died++ })()
		time.Sleep(time.Minute)
		assert.Equal(t, 1, died, "no Interrupt, no death")
	})
}

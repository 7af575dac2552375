package lab

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWorkTimeIsWorkWithoutJitter(t *testing.T) {
	p := DefaultPlan()
	assert.Equal(t, 100*time.Millisecond, p.WorkTime("A", 1))
	assert.Equal(t, 100*time.Millisecond, p.WorkTime("C", 7))
}

func TestWorkTimeSpreadsWithinJitterAndRepeats(t *testing.T) {
	p := Plan{Work: 100 * time.Millisecond, Jitter: 50 * time.Millisecond, Seed: 3}
	seen := map[time.Duration]bool{}
	var sum time.Duration
	for i := range 200 {
		id := string(rune('A' + i%26))
		d := p.WorkTime(id, i)
		assert.GreaterOrEqual(t, d, 50*time.Millisecond)
		assert.Less(t, d, 150*time.Millisecond)
		assert.Equal(t, d, p.WorkTime(id, i), "same (seed, task, attempt), same duration")
		seen[d] = true
		sum += d
	}
	assert.Greater(t, len(seen), 190, "durations differ to the nanosecond")
	assert.InDelta(t, float64(100*time.Millisecond), float64(sum/200), float64(10*time.Millisecond), "centred on Work")
}

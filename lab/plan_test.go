package lab

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanPoisonAlwaysFails(t *testing.T) {
	p := DefaultPlan()
	for attempt := 1; attempt <= 10; attempt++ {
		assert.ErrorIs(t, p.Fails("C", attempt), ErrPoison)
		assert.NoError(t, p.Fails("A", attempt), "no fail rate: healthy tasks succeed")
	}
}

func TestPlanFailsIsDeterministic(t *testing.T) {
	a := Plan{FailRate: 0.5, Seed: 42}
	b := Plan{FailRate: 0.5, Seed: 42}
	other := Plan{FailRate: 0.5, Seed: 43}
	differs := false
	for _, id := range []string{"A", "B", "C", "D"} {
		for attempt := 1; attempt <= 20; attempt++ {
			assert.Equal(t, a.Fails(id, attempt) == nil, b.Fails(id, attempt) == nil, "same seed, same verdict")
			if a.Fails(id, attempt) == nil != (other.Fails(id, attempt) == nil) {
				differs = true
			}
		}
	}
	assert.True(t, differs, "another seed fails other attempts")
}

func TestPlanTransientErrorNamesTheAttempt(t *testing.T) {
	p := Plan{FailRate: 1}
	err := p.Fails("A", 3)
	assert.True(t, errors.Is(err, ErrTransient))
	assert.Contains(t, err.Error(), "attempt 3")
	assert.NoError(t, Plan{FailRate: 0}.Fails("A", 1))
}

// Over many seeds the observed failure rate is close to FailRate, and the
// verdicts within one seed are independent: with rate 0.5 and 12 attempts,
// a seed that fails all or none of them should be rare (expected 0.05 %
// each). A hash that ignores task and attempt fails this.
func TestPlanFailRateIsHonest(t *testing.T) {
	for _, rate := range []float64{0.1, 0.3, 0.5, 0.9} {
		fails, n, extreme := 0, 0, 0
		for seed := int64(1); seed <= 2000; seed++ {
			p := Plan{FailRate: rate, Seed: seed}
			perSeed := 0
			for _, id := range []string{"A", "B", "C", "D"} {
				for attempt := 1; attempt <= 3; attempt++ {
					n++
					if p.Fails(id, attempt) != nil {
						fails++
						perSeed++
					}
				}
			}
			if perSeed == 0 || perSeed == 12 {
				extreme++
			}
		}
		assert.InDelta(t, rate, float64(fails)/float64(n), 0.02, "rate %g", rate)
		if rate == 0.5 {
			assert.Less(t, extreme, 20, "all-or-nothing seeds: verdicts are correlated within a seed")
		}
	}
}

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

func TestScaledPlan(t *testing.T) {
	p, err := ScaledPlan(12)
	assert.NoError(t, err)
	assert.Equal(t, []string{"t01", "t02", "t03", "t04"}, p.Tasks[:4], "ids sort in arrival order")
	assert.Equal(t, []string{"t03", "t07", "t11"}, p.Poison, "every fourth task, as C is of A, B, C, D")
	assert.Equal(t, DefaultPlan().Work, p.Work)
	big, err := ScaledPlan(MaxTasks)
	assert.NoError(t, err)
	assert.Equal(t, "t100000", big.Tasks[MaxTasks-1])
	for _, n := range []int{0, -1, MaxTasks + 1} {
		_, err := ScaledPlan(n)
		assert.Error(t, err, "%d tasks", n)
	}
}

// A scaled plan's poison index agrees with its Poison list for every
// task, and a plan whose Poison was replaced after scaling (as compare
// does) answers from the new list, not the stale index.
func TestScaledPlanPoisonIndexAgreesWithTheList(t *testing.T) {
	p, err := ScaledPlan(1000)
	require.NoError(t, err)
	for _, id := range p.Tasks {
		assert.Equal(t, slices.Contains(p.Poison, id), errors.Is(p.Fails(id, 1), ErrPoison), id)
	}
	big, err := ScaledPlan(MaxTasks)
	require.NoError(t, err)
	poison := map[string]bool{}
	for _, id := range big.Poison {
		poison[id] = true
	}
	require.Len(t, poison, MaxTasks/4)
	for _, id := range big.Tasks {
		require.Equal(t, poison[id], errors.Is(big.Fails(id, 1), ErrPoison), id)
	}
	q := p
	q.Poison = nil
	assert.NoError(t, q.Fails(p.Poison[0], 1), "no poison left")
	q.Poison = []string{p.Tasks[0]}
	assert.ErrorIs(t, q.Fails(p.Tasks[0], 1), ErrPoison)
	assert.NoError(t, q.Fails(p.Poison[0], 1))
}

// BenchmarkScaledPlanFails is one attempt's failure check in a
// 100,000-task plan: a binary search of its sorted poison ids, where a
// scan of its 25,000 poison ids made a --tasks 100000 run quadratic.
func BenchmarkScaledPlanFails(b *testing.B) {
	p, err := ScaledPlan(MaxTasks)
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		_ = p.Fails(p.Tasks[i%len(p.Tasks)], 1)
	}
}

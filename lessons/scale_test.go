package lessons

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
)

// scaledPlan is n tasks arriving every, every fourth one poison.
func scaledPlan(t *testing.T, n int, every time.Duration) *lab.Plan {
	t.Helper()
	p, err := lab.ScaledPlan(n)
	require.NoError(t, err)
	p.Every = every
	return &p
}

// assertScaledRun checks a run of plan: every task accounted for, each
// one of the plan, poison dead or pending, healthy ones done.
func assertScaledRun(t *testing.T, plan *lab.Plan, events []lab.Event) {
	t.Helper()
	labtest.AssertAccounted(t, events)
	fates := labtest.Fates(events)
	require.Len(t, fates, len(plan.Tasks))
	for i, id := range plan.Tasks {
		rec, ok := fates[id]
		require.True(t, ok, "task %s has no summary", id)
		if i%4 == 2 {
			assert.NotEqual(t, lab.FateDone, rec.Fate, "poison %s", id)
		} else {
			assert.Equal(t, lab.FateDone, rec.Fate, "healthy %s", id)
		}
	}
}

// TestScalingLessonsAccountForThousandsInMemory: every lesson that
// declares Scales runs 2000 tasks arriving 50 per lesson second under
// synctest, and every one of them is accounted for.
func TestScalingLessonsAccountForThousandsInMemory(t *testing.T) {
	t.Parallel() // in synctest bubbles; started early, the broker suites need not wait for it
	plan := scaledPlan(t, 2000, 20*time.Millisecond)
	for _, l := range All {
		if !l.Scales || l.InMem == nil {
			continue
		}
		t.Run(l.ID, func(t *testing.T) {
			t.Parallel()
			events, _ := lessontest.RunInMem(t, l, lesson.Options{Plan: plan})
			assertScaledRun(t, plan, events)
		})
	}
}

// TestScalingLessonsOnTheBroker: every broker lesson that declares Scales
// runs 300 tasks on the real broker, all accounted for.
func TestScalingLessonsOnTheBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("make quick: one broker pass; 300-task broker runs are make test's")
	}
	t.Parallel() // beside the package's other broker suites: the runs mostly wait on the broker's timers
	plan := scaledPlan(t, 300, 0)
	for _, l := range All {
		if !l.Scales || l.Rabbit == nil {
			continue
		}
		t.Run(l.ID, func(t *testing.T) {
			t.Parallel()
			// Fates, not timing, are asserted here: a faster clock than the
			// lesson's TestSpeed keeps 300 tasks' TTL waits short.
			events, _ := lessontest.RunRabbit(t, l, lesson.Options{Plan: plan, Speed: 20})
			assertScaledRun(t, plan, events)
		})
	}
}

// TestArrivalsArePaced: with Plan.Every the producer enqueues one task per
// gap, so the last task arrives (n-1)·Every after the first.
func TestArrivalsArePaced(t *testing.T) {
	every := 250 * time.Millisecond
	plan := scaledPlan(t, 8, every)
	for _, l := range All {
		if !l.Scales || l.InMem == nil {
			continue
		}
		t.Run(l.ID, func(t *testing.T) {
			events, _ := lessontest.RunInMem(t, l, lesson.Options{Plan: plan})
			first := labtest.FirstAt(t, events, lab.Enqueued, plan.Tasks[0])
			last := labtest.FirstAt(t, events, lab.Enqueued, plan.Tasks[len(plan.Tasks)-1])
			assert.Equal(t, int64(7*every/time.Millisecond), last-first)
		})
	}
}

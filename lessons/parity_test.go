package lessons

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson/lessontest"
)

// TestParity is the shared suite every dual-backend lesson joins by being
// registered with both backends (watermill's pubsub/tests, for lessons):
// each runs in memory and on the broker over the default plan and seeded
// failure plans, and what must match, matches: every task's fate, its
// attempts, and the configured delay of every wait it sat out, in order
// (a lesson that says why its outcome depends on real time is held to
// less: see Parity).
func TestParity(t *testing.T) {
	for _, l := range All {
		if !l.Dual() {
			continue
		}
		for _, p := range parityPlans(l) {
			t.Run(l.ID+"/"+p.name, func(t *testing.T) {
				t.Parallel() // each run declares under names of its own (rabbit.RunNames)
				mem, _ := lessontest.RunInMem(t, l, Options{Plan: p.plan})
				broker, _ := lessontest.RunRabbit(t, l, Options{Plan: p.plan})
				labtest.AssertAccounted(t, broker)
				assert.Equal(t, outcomes(mem, l.Parity), outcomes(broker, l.Parity), "fates (and attempts) per task")
				assert.Equal(t, waits(mem, l.Parity), waits(broker, l.Parity), "each task's configured waits")
			})
		}
	}
}

type namedPlan struct {
	name string
	plan *lab.Plan
}

// parityPlans are the plans the suite runs l over: the default, seeded
// failure plans (not for a timing-sensitive lesson), and any the lesson
// adds.
func parityPlans(l Lesson) []namedPlan {
	out := []namedPlan{{"default", nil}}
	if l.Parity.TimingSensitive == "" {
		out = append(out, namedPlan{"seed3", lessontest.SeededPlan(3)}, namedPlan{"seed7", lessontest.SeededPlan(7)})
	}
	for i, p := range l.Parity.Plans {
		out = append(out, namedPlan{fmt.Sprintf("lesson%d", i+1), &p})
	}
	return out
}

// outcomes maps each task to its summary's fate, and its attempts unless
// the lesson is timing-sensitive.
func outcomes(events []lab.Event, p Parity) map[string]string {
	out := map[string]string{}
	for id, r := range labtest.Fates(events) {
		out[id] = string(r.Fate)
		if p.TimingSensitive == "" {
			out[id] += fmt.Sprintf("/%d", r.Attempts)
		}
	}
	return out
}

// waits maps each task to the configured delays (delay_ms) of its
// scheduled events, via which wait queue, in order. Where the attempts
// may vary, so does who waits how often: then it is the distinct waits of
// the whole run, under "*".
func waits(events []lab.Event, p Parity) map[string][]string {
	out := map[string][]string{}
	for _, e := range labtest.OfKind(events, lab.Scheduled) {
		w, key := fmt.Sprintf("%s %dms", e.Via, e.DelayMs), e.Task
		if p.TimingSensitive != "" {
			key = "*"
			if slices.Contains(out[key], w) {
				continue
			}
		}
		out[key] = append(out[key], w)
	}
	return out
}

package lessons

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestParity is the shared suite every dual-backend lesson joins by being
// registered with both backends (watermill's pubsub/tests, for lessons):
// each runs in memory and on the broker over the default plan and seeded
// failure plans, and what must match, matches: every task's fate, its
// attempts, and the configured delay of every wait it sat out, in order
// (a lesson that says why its outcome depends on real time is held to
// less: see Parity). What a backend can do (flow.Features) decides the
// rest: a wait queue's depth is visible mid-retry only where WaitDepth
// holds; timings are compared exactly only where the lesson declares them
// exact and both backends keep exact time; see TestParityInterrupted for
// SurvivesCrash.
func TestParity(t *testing.T) {
	t.Parallel() // beside the package's other broker suites: the runs mostly wait on the broker's timers
	mem, broker := lesson.FeaturesOf(lab.InMem), lesson.FeaturesOf(lab.Rabbit)
	for _, l := range dualLessons() {
		for _, v := range brokerLines() {
			for _, name := range parityPlans(l) {
				t.Run(l.ID+versionTag(v)+"/"+name, func(t *testing.T) {
					lessontest.Start(t, v, l, name, recordedOpts(t, l, name))
					t.Parallel() // each run declares under names of its own (rabbit.RunNames)
					parity(t, l, v, name, mem, broker)
				})
			}
		}
	}
}

// parity runs l in memory and on the broker of line v with the options
// recordedOpts names (the broker run shared with the suites that read the
// same one) and holds the two runs to what TestParity says must match.
func parity(t *testing.T, l lesson.Lesson, v rabbittest.Version, name string, mem, broker flow.Features) {
	t.Helper()
	opts := recordedOpts(t, l, name)
	memEvents, memRes := lessontest.RunInMem(t, l, opts)
	brokerEvents, brokerRes := lessontest.Recorded(t, v, l, name, opts)
	labtest.AssertAccounted(t, memEvents)
	labtest.AssertAccounted(t, brokerEvents)
	raced := raced(l.Parity, memEvents, brokerEvents)
	assert.Equal(t, outcomes(memEvents, l.Parity, raced), outcomes(brokerEvents, l.Parity, raced),
		"fates (and attempts) per task (left out, decided by the broker's lateness: %v)", raced)
	if l.Parity.TimingSensitive != "" && len(labtest.OfKind(brokerEvents, lab.Failed)) == 0 {
		// Real time decided that no call failed on the broker (ci c2 of
		// 2026-11-28: at a load of 22, Q12's 0.75 s outage passed with
		// no call inside it): then nothing may have waited either.
		assert.Empty(t, waits(brokerEvents, l.Parity), "no failure on the broker, so no wait")
	} else {
		assert.Equal(t, waits(memEvents, l.Parity), waits(brokerEvents, l.Parity), "each task's configured waits")
	}
	if opts.Sample > 0 {
		assertWaitDepth(t, mem, memEvents, memRes)
		assertWaitDepth(t, broker, brokerEvents, brokerRes)
	}
	if l.Parity.ExactTimes {
		assertTimings(t, l, [2]flow.Features{mem, broker}, [2][]lab.Event{memEvents, brokerEvents})
	}
}

// TestParityInterrupted runs every dual-backend lesson with its process
// dying mid-run. Where the backend SurvivesCrash (the broker) no task is
// lost; where it does not (memory), tasks in flight are lost, and the
// stream says so: on both, every task ends with a summary that agrees with
// its events, and none is left pending.
func TestParityInterrupted(t *testing.T) {
	t.Parallel() // beside the package's other broker suites: the runs mostly wait on the broker's timers
	for _, l := range dualLessons() {
		for _, b := range l.Backends() {
			for _, v := range versionsOf(b) {
				t.Run(l.ID+"/"+string(b)+versionTag(v), func(t *testing.T) {
					t.Parallel() // a bubble, or broker names, of its own
					interrupted(t, l, b, v)
				})
			}
		}
	}
}

// versionsOf lists the broker lines TestParityInterrupted runs backend b
// on: none under -short (make quick's one broker pass is the default
// runs), none but a placeholder in memory.
func versionsOf(b lab.Backend) []rabbittest.Version {
	if b == lab.Rabbit {
		if testing.Short() {
			return nil
		}
		return brokerLines()
	}
	return []rabbittest.Version{rabbittest.V310} // unused in memory; names stay plain
}

// interrupted runs l on backend b (line v on the broker) with its process
// dying mid-run and checks what TestParityInterrupted says.
func interrupted(t *testing.T, l lesson.Lesson, b lab.Backend, v rabbittest.Version) {
	t.Helper()
	events, res := runInterrupted(t, b, v, l)
	require.True(t, res.Interrupted, "%s takes an interrupt (lesson.Env.InterruptAfter)", l.ID)
	labtest.AssertAccounted(t, events)
	lost := 0
	for id, r := range labtest.Fates(events) {
		assert.NotEqual(t, lab.FatePending, r.Fate, "task %s", id)
		if r.Fate == lab.FateLost && !slices.Contains(l.LosesOnPurpose, id) {
			lost++
		}
	}
	if lesson.FeaturesOf(b).SurvivesCrash {
		assert.Zero(t, lost, "the broker keeps every message through the crash")
	} else {
		t.Logf("%s in memory: the crash lost %d task(s), each reported lost", l.ID, lost)
	}
}

// interruptAt is when the process dies in TestParityInterrupted, in lesson
// time from the workers' start: while retries wait (as in compare).
const interruptAt = 2 * time.Second

// runInterrupted runs l on backend b with the process dying at
// interruptAt; in memory the run ends in inmem.ErrCrashed, as it should.
func runInterrupted(t *testing.T, b lab.Backend, v rabbittest.Version, l lesson.Lesson) ([]lab.Event, lesson.Result) {
	t.Helper()
	opts := lesson.Options{Plan: lessontest.SeededPlan(3), Interrupt: interruptAt}
	if b == lab.Rabbit {
		return lessontest.RunRabbitOn(t, v, l, opts)
	}
	var rec lab.Recorder
	var res lesson.Result
	opts.Backend = lab.InMem
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = lesson.Run(context.Background(), l, opts, &rec)
		if !errors.Is(err, inmem.ErrCrashed) {
			require.NoError(t, err)
		}
	})
	return rec.Events, res
}

// dualLessons lists the lessons with both backends, slowest broker
// run first (slowestFirst).
func dualLessons() []lesson.Lesson {
	var out []lesson.Lesson
	for _, l := range slowestFirst() {
		if l.Dual() {
			out = append(out, l)
		}
	}
	return out
}

// sampleEvery is how often the default-plan runs sample queue depths: 5
// ms of real time on the broker at l's test speed, in lesson time.
func sampleEvery(l lesson.Lesson) time.Duration {
	speed := float64(lessontest.RabbitSpeed)
	if l.TestSpeed > 0 {
		speed = l.TestSpeed
	}
	return time.Duration(speed * float64(5*time.Millisecond))
}

// assertWaitDepth checks what a backend's WaitDepth says of each wait
// queue tasks sat out delays in: with it, the queue's depth was seen above
// zero while they waited; without it (tasks waiting on timers), never.
// A queue is judged on all its waits together, from the probes that
// started and returned within one, and only when there were at least
// minWaitSamples. A wait lasts from the task's scheduled event to its next
// start: on the broker the message enters the wait queue some time after
// the scheduled event (the reject, then the dead-letter hop) and leaves
// it a TTL later, and a probe is a broker round trip that reads the queue
// somewhere between its stamps. Cut at the configured delay, the windows
// kept the early probes, taken before the message was in: with both
// cores busy all 10 of Q19's retry.2s inside them read 0 (ci108), as had
// 14 and 10 before (ci71, ci77). One short wait can fall between two
// rounds (Q14's 75 ms ones did, Q10's 250 ms one once, and all 13 samples
// of one of Q13's 25 ms waits at 200× once); a queue is judged on its
// waits together, each sample once.
func assertWaitDepth(t *testing.T, f flow.Features, events []lab.Event, res lesson.Result) {
	t.Helper()
	type waitQueue struct {
		name   string
		waits  [][2]time.Duration // from, to
		queued bool               // its waits sit in the queue, not on timers
	}
	var qs []*waitQueue
	for _, e := range labtest.OfKind(events, lab.Scheduled) {
		i := slices.IndexFunc(qs, func(q *waitQueue) bool { return q.name == e.Via })
		if i < 0 {
			i, qs = len(qs), append(qs, &waitQueue{name: e.Via})
		}
		q := qs[i]
		q.waits = append(q.waits, [2]time.Duration{time.Duration(e.TMs) * time.Millisecond, waitEnd(events, e)})
		// A per-message expiration waits in a real delay queue on both
		// backends (in memory the FIFO that expires only its head).
		q.queued = q.queued || f.WaitDepth || strings.HasPrefix(e.Note, flow.ExpirationNote)
	}
	for _, q := range qs {
		seen, peak := samplesIn(res.Depths, q.name, q.waits)
		switch {
		case seen < minWaitSamples:
		case q.queued:
			assert.Positive(t, peak, "%d waits in %s: its depth shows them (%d samples)", len(q.waits), q.name, seen)
		default:
			assert.Zero(t, peak, "%d waits on a timer, in no queue: %s stays empty", len(q.waits), q.name)
		}
	}
}

// minWaitSamples is how many depth samples a wait needs to be judged.
const minWaitSamples = 10

// waitEnd is when the wait that scheduled event e began ended: the task's
// next start, or the end of the run if it never started again.
func waitEnd(events []lab.Event, e lab.Event) time.Duration {
	for _, s := range labtest.Of(events, e.Task, lab.Started) {
		if s.Seq > e.Seq {
			return time.Duration(s.TMs) * time.Millisecond
		}
	}
	return time.Duration(events[len(events)-1].TMs) * time.Millisecond
}

// samplesIn counts the samples of queue whose probe ran within one of
// waits (it started and returned in it), each once, and returns the
// deepest (a lesson in phases watches a queue once per phase).
func samplesIn(depths []lesson.Series, queue string, waits [][2]time.Duration) (seen, peak int) {
	for _, s := range depths {
		if s.Queue != queue {
			continue
		}
		for i, at := range s.At {
			if slices.ContainsFunc(waits, func(w [2]time.Duration) bool { return at >= w[0] && s.Until[i] <= w[1] }) {
				seen++
				peak = max(peak, s.Samples[i])
			}
		}
	}
	return seen, peak
}

// assertTimings checks each task's gaps from a failure to its next
// attempt: equal between two backends that keep exact lesson time, and on
// each backend never shorter than the configured wait (one real ms of
// rounding allowed where time is measured: stamps round to a real ms).
func assertTimings(t *testing.T, l lesson.Lesson, fs [2]flow.Features, runs [2][]lab.Event) {
	t.Helper()
	if fs[0].ExactTime && fs[1].ExactTime {
		assert.Equal(t, gaps(runs[0]), gaps(runs[1]), "exact time on both: the same gaps")
	}
	for i, events := range runs {
		slack := int64(0)
		if !fs[i].ExactTime {
			slack = int64(max(l.TestSpeed, lessontest.RabbitSpeed))
		}
		for task, gs := range gaps(events) {
			for _, g := range gs {
				assert.GreaterOrEqual(t, g.took, g.wait-slack, "%s started again %d ms after a %d ms wait", task, g.took, g.wait)
			}
		}
	}
}

// gap is one retry: its configured wait and how long after the failure
// the next attempt started, in lesson ms.
type gap struct{ wait, took int64 }

// gaps maps each task to its retries' gaps, in order.
func gaps(events []lab.Event) map[string][]gap {
	out := map[string][]gap{}
	for _, e := range labtest.OfKind(events, lab.Scheduled) {
		for _, s := range labtest.Of(events, e.Task, lab.Started) {
			if s.Seq > e.Seq {
				out[e.Task] = append(out[e.Task], gap{e.DelayMs, s.TMs - e.TMs})
				break
			}
		}
	}
	return out
}

// parityPlans names the plans the suite runs l over (recordedOpts): the
// default, seeded failure plans (not for a timing-sensitive lesson), and
// any the lesson adds.
func parityPlans(l lesson.Lesson) []string {
	out := []string{"default"}
	if testing.Short() {
		return out // make quick: one broker pass, the default run
	}
	if l.Parity.TimingSensitive == "" {
		out = append(out, "seed3", "seed7")
	}
	for i := range l.Parity.Plans {
		out = append(out, fmt.Sprintf("lesson%d", i+1))
	}
	return out
}

// raced is the tasks whose fate the broker's lateness decided in either
// run, by the lesson's own rule (Parity.Raced).
func raced(p lesson.Parity, runs ...[]lab.Event) []string {
	var out []string
	if p.Raced == nil {
		return nil
	}
	for _, events := range runs {
		out = append(out, p.Raced(events)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// outcomes maps each task to its summary's fate, and its attempts unless
// the lesson is timing-sensitive, leaving out the lesson's own crash and
// the tasks in skip.
func outcomes(events []lab.Event, p lesson.Parity, skip []string) map[string]string {
	out := map[string]string{}
	for id, r := range labtest.Fates(events) {
		if slices.Contains(p.Crashed, id) || slices.Contains(skip, id) {
			continue // the lesson's own crash, or a fate the broker's timing decided
		}
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
func waits(events []lab.Event, p lesson.Parity) map[string][]string {
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

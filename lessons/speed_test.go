package lessons

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// speedCut bounds one broker run of TestEverySpeed in real time: at
// --speed 1 it covers the first long wait of every lesson (Q14's 30 s
// retry, Q19's 16 s one, each longer than the watchdog's 10 s real-time
// floor), and a slower lesson is cut there, by its parts. A wait still
// running at the cut counts as far as it went, and at --speed 1 the cut
// waits (up to cutDelayMax) for a long wait already begun to pass the
// floor: in ci c1 of 2026-11-28, at a load of 10 on two cores, no 30 s
// wait had ended by the cut, and in stop 38's CI none had sat 10 s.
const speedCut = 40 * time.Second

// speedEnd bounds how long a cut run of TestEverySpeed may take to end
// (its clean-up is bounded at 10 s); one that takes longer hangs.
const speedEnd = time.Minute

// errHung is a TestEverySpeed run that did not end after its cut.
var errHung = errors.New("hung")

// TestEverySpeed runs every broker lesson at --speed 1 and at two speeds
// between 1 and its own pace (or its test speed, if faster), on each
// backend it has, and asserts that nothing is lost: a run that finishes
// loses only what the lesson loses on purpose, and one cut at speedCut
// lost nothing before the cut and did not stall. Before the broker's
// watchdog counted the waits a run scheduled, Q14 lost A and E at
// --speed 1, 10 and 20 (issue 31).
//
// --speed 1 runs on both broker lines (rabbittest.Versions), but for a
// lesson of realTimeFirst (its test line only); the two
// speeds between run on the lesson's test line only (testLine): what
// they add is the client's pacing of lesson time (the watchdog, the
// timers, the clock), the same code whichever broker answers, and a
// line's own behaviour (its TTLs, dead-lettering, delivery counts) does
// not change with the speed: --speed 1 holds it through the first long
// wait, and the other suites at the test speed, on both lines.
//
// The broker runs go at once (they wait on the broker's timers, not the
// CPU), on both broker lines at once, so the test takes about speedCut
// and the clean-up; the in-memory runs are instant, in synctest bubbles.
func TestEverySpeed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every broker lesson for up to 40 s of real time")
	}
	t.Parallel() // beside the package's other broker suites: the runs wait on the broker's timers
	for _, l := range All {
		if l.Rabbit == nil || l.InMem == nil {
			continue
		}
		for _, speed := range speedsOf(l) {
			t.Run(fmt.Sprintf("%s/inmem/%g", l.ID, speed), func(t *testing.T) {
				events, _ := lessontest.RunInMem(t, l, lesson.Options{Speed: speed})
				labtest.AssertAccounted(t, events)
				assert.Empty(t, lostBefore(l, lab.InMem, events), "lost")
			})
		}
	}
	// Subtests that are not t.Parallel, run from goroutines of their
	// own: all at once, whatever -parallel says, and -run still picks.
	var wg sync.WaitGroup
	for _, v := range rabbittest.Versions {
		wg.Go(func() { t.Run("rabbit-"+string(v), func(t *testing.T) { everySpeedOn(t, v) }) })
	}
	wg.Wait()
}

// everySpeedOn runs TestEverySpeed's broker cases on the broker of line
// v, all at once.
func everySpeedOn(t *testing.T, v rabbittest.Version) {
	url := rabbittest.Need(t, v)
	var cases []*speedCase
	for _, l := range All {
		if l.Rabbit == nil || l.Cluster || (l.MinBroker != "" && !lesson.VersionAtLeast(string(v), l.MinBroker)) {
			continue // Q21 needs a cluster; Q25 says in one line that 3.10 cannot, its own tests hold that
		}
		for _, speed := range speedsOf(l) {
			if v == testLine(l) || speed == 1 && !realTime(l) {
				cases = append(cases, &speedCase{l: l, speed: speed})
			}
		}
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Go(func() {
			t.Run(fmt.Sprintf("%s/%g", c.l.ID, c.speed), func(t *testing.T) {
				c.run(url)
				c.check(t)
			})
		})
	}
	wg.Wait()
	longest, all := time.Duration(0), true
	for _, c := range cases {
		all = all && c.took > 0 // -run may have picked a few
		if c.speed == 1 {       // real time is lesson time: a wait still running counts as far as it went
			longest = max(longest, longestGap(c.events[:c.before]), c.sitting)
		}
	}
	if all {
		assert.Greater(t, longest, watchdogFloor,
			"at --speed 1 some run sat out a wait longer than the watchdog's real-time floor")
	}
}

// testLine is the broker line a suite that runs l on one line only runs
// it on (TestWidth, TestEverySpeed's speeds between 1 and its pace): the
// suites' 3.10, or 4.3 for a lesson that needs it (Lesson.MinBroker).
func testLine(l lesson.Lesson) rabbittest.Version {
	if l.MinBroker != "" {
		return rabbittest.V43
	}
	return rabbittest.V310
}

// longestGap is the longest lesson time a task of events waited between
// the end of one attempt and the start of the next.
func longestGap(events []lab.Event) time.Duration {
	ended := map[string]int64{}
	var longest int64
	for _, e := range events {
		switch e.Kind {
		case lab.Failed:
			ended[e.Task] = e.TMs
		case lab.Started:
			if at, ok := ended[e.Task]; ok {
				longest = max(longest, e.TMs-at)
			}
		}
	}
	return time.Duration(longest) * time.Millisecond
}

// speedsOf is 1 and two speeds between 1 and the faster of l's own pace
// and its test speed, evenly apart on a log scale, to a tenth; only 1 for
// a lesson that spends speedCut in real time (realTimeFirst).
func speedsOf(l lesson.Lesson) []float64 {
	if realTime(l) {
		return []float64{1}
	}
	top := max(l.WatchSpeed, l.TestSpeed)
	if l.TestSpeed == 0 {
		top = max(top, lessontest.RabbitSpeed)
	}
	out := []float64{1}
	for _, f := range []float64{1.0 / 3, 2.0 / 3} {
		s := math.Round(math.Pow(top, f)*10) / 10
		if s > out[len(out)-1] {
			out = append(out, s)
		}
	}
	return out
}

// realTimeFirst lists the lessons whose runs spend speedCut on work that
// takes real time, whatever the speed, and why: cut at speedCut, a run at
// a speed between 1 and its pace would be the --speed 1 run again, and
// one on the second broker line the broker suites' runs there (they
// publish the same messages). Such a lesson runs at --speed 1 on its test
// line only.
var realTimeFirst = map[string]string{
	"Q17": "it first measures publisher confirms on real messages, 27 s on an idle machine and " +
		"over speedCut on a loaded one; its lesson-clock part (the workers) comes after",
}

// realTime says whether l is one of realTimeFirst.
func realTime(l lesson.Lesson) bool {
	_, ok := realTimeFirst[l.ID]
	return ok
}

// speedCase is one broker run of TestEverySpeed.
type speedCase struct {
	l     lesson.Lesson
	speed float64

	err    error
	events []lab.Event
	before int  // how many events came before the cut
	cut    bool // the run was still going at speedCut
	took   time.Duration
	// sitting is how long the longest wait still running at the cut had
	// lasted, real time: on a loaded machine a lesson's first long wait
	// may not have ended by speedCut, yet the run sat it out that far.
	sitting time.Duration
}

// watchdogFloor is the broker watchdog's real-time floor (rabbit's
// minRealPatience): at --speed 1 a run must sit out a longer wait.
const watchdogFloor = 10 * time.Second

// cutDelayMax bounds how far past speedCut a --speed 1 run's cut may move
// to let a long wait already begun pass watchdogFloor (speedCase.delayCut).
const cutDelayMax = 20 * time.Second

// waitWatch is a Recorder that also notes, in real time, when each
// task's latest wait was scheduled and how long it was to last, until the
// task starts again or its wait ends otherwise.
type waitWatch struct {
	labtest.Recorder
	mu      sync.Mutex
	waiting map[string]wait
}

// wait is a wait in progress: when it began (real time) and its
// configured delay (lesson time).
type wait struct {
	since time.Time
	delay time.Duration
}

// Emit records e and notes the wait it begins or ends.
func (w *waitWatch) Emit(e lab.Event) {
	w.Recorder.Emit(e)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e.Kind {
	case lab.Scheduled:
		if w.waiting == nil {
			w.waiting = map[string]wait{}
		}
		w.waiting[e.Task] = wait{time.Now(), time.Duration(e.DelayMs) * time.Millisecond}
	case lab.Started, lab.DeadLettered, lab.Dropped, lab.Lost, lab.Summary:
		delete(w.waiting, e.Task)
	}
}

// longestSitting is how long the oldest wait still running at now has
// lasted.
func (w *waitWatch) longestSitting(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	for _, x := range w.waiting {
		longest = max(longest, now.Sub(x.since))
	}
	return longest
}

// passesFloor is when the earliest-begun wait still running that is
// configured longer than watchdogFloor will have lasted a second past it
// (real time is lesson time at --speed 1); false if there is none.
func (w *waitWatch) passesFloor() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, x := range w.waiting {
		if x.delay > watchdogFloor+time.Second && (first.IsZero() || x.since.Before(first)) {
			first = x.since
		}
	}
	return first.Add(watchdogFloor + time.Second), !first.IsZero()
}

// run runs the case on the broker at url, cut at speedCut (or later, see
// delayCut).
func (c *speedCase) run(url string) {
	var rec waitWatch
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	ended := make(chan error, 1)
	go func() {
		_, err := lesson.Run(ctx, c.l, lesson.Options{Backend: lab.Rabbit, Broker: url, Speed: c.speed}, &rec)
		ended <- err
	}()
	cut := time.NewTimer(speedCut)
	defer cut.Stop()
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-ended:
			waiting = false
		case <-cut.C:
			if later := c.delayCut(&rec, start); later > 0 {
				cut.Reset(later)
				continue
			}
			c.cut, c.before = true, len(rec.Events())
			c.sitting = rec.longestSitting(time.Now())
			cancel()
			select {
			case err = <-ended:
			case <-time.After(speedEnd): // the run is abandoned: the case fails, the test binary goes on
				err = fmt.Errorf("%w: the run did not end within %v of its cut", errHung, speedEnd)
			}
			waiting = false
		}
	}
	c.err, c.events, c.took = err, rec.Events(), time.Since(start)
	if !c.cut {
		c.before = len(c.events)
	}
}

// delayCut is how much later than now a --speed 1 run's cut should fall:
// on a loaded machine a lesson's first long wait may begin late, and
// TestEverySpeed needs one run to sit it out past watchdogFloor. The cut
// waits for that while such a wait is running, the run has not yet sat
// one out, and the delay ends within cutDelayMax of speedCut; otherwise 0.
func (c *speedCase) delayCut(rec *waitWatch, start time.Time) time.Duration {
	if c.speed != 1 || longestGap(rec.Events()) > watchdogFloor {
		return 0
	}
	at, ok := rec.passesFloor()
	if !ok || at.Sub(start) > speedCut+cutDelayMax {
		return 0
	}
	return time.Until(at)
}

// check asserts what the case's run must show.
func (c *speedCase) check(t *testing.T) {
	t.Logf("%s at %g×: %v real, cut: %v, longest wait between attempts before the cut: %v of lesson time, "+
		"one still running at the cut: %v real",
		c.l.ID, c.speed, c.took.Round(time.Millisecond), c.cut, longestGap(c.events[:c.before]), c.sitting.Round(time.Millisecond))
	if !c.cut || slices.ContainsFunc(c.events, func(e lab.Event) bool { return e.Task != "" }) {
		labtest.AssertAccounted(t, c.events) // cut, Q17 is still measuring: no task yet
	}
	if !c.cut || errors.Is(c.err, errHung) {
		assert.NoError(t, c.err)
	} else if c.err != nil {
		assert.NotErrorIs(t, c.err, rabbit.ErrStalled)
		assert.NotContains(t, c.err.Error(), rabbit.ErrStalled.Error())
	}
	lost := lostBefore(c.l, lab.Rabbit, c.events[:c.before])
	assert.Empty(t, lost, "lost before the cut")
	if len(lost) > 0 || c.err != nil && strings.Contains(c.err.Error(), rabbit.ErrStalled.Error()) {
		t.Logf("where the pending tasks were:\n%s", lastMoves(c.events, 6))
	}
}

// lastMoves is, for each task events report lost, its last n events
// before that, one line each: where a stalled run left it.
func lastMoves(events []lab.Event, n int) string {
	var b strings.Builder
	for i, e := range events {
		if e.Kind != lab.Lost {
			continue
		}
		story := labtest.Of(events[:i], e.Task)
		fmt.Fprintf(&b, "%s:\n", e.Task)
		for _, m := range story[max(0, len(story)-n):] {
			fmt.Fprintf(&b, "  %7.3fs %-13s %s → %s via %s %dms %s\n",
				float64(m.TMs)/1000, m.Kind, m.Queue, m.To, m.Via, m.DelayMs, m.Note)
		}
	}
	return b.String()
}

// lostBefore lists the lost events among events that l does not lose on
// purpose on backend b.
func lostBefore(l lesson.Lesson, b lab.Backend, events []lab.Event) []string {
	crashLoses := !lesson.FeaturesOf(b).SurvivesCrash
	var out []string
	for _, e := range events {
		switch {
		case e.Kind != lab.Lost, slices.Contains(l.LosesOnPurpose, e.Task):
		case crashLoses && slices.Contains(l.Parity.Crashed, e.Task):
		default:
			out = append(out, e.Task+": "+e.Note)
		}
	}
	return out
}

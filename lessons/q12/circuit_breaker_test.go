package q12

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/email"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// q12Run splits a Q12 run's events by task prefix ("n" or "b"): its
// mails' events from the first on, and the task-less breaker events
// (the reset timer's half-open) among them, without summaries. It returns
// the lesson time the run started at.
func q12Run(events []lab.Event, prefix string) (run []lab.Event, start int64) {
	start = -1
	for _, e := range events {
		if e.Kind == lab.Summary {
			break
		}
		mine := strings.HasPrefix(e.Task, prefix)
		timer := e.Kind == lab.Breaker && e.Task == "" && start >= 0
		if e.Kind == lab.Phase && start >= 0 {
			break // the next run
		}
		if !mine && !timer {
			continue
		}
		if start < 0 {
			start = e.TMs
		}
		run = append(run, e)
	}
	return run, start
}

func TestQ12EveryMailDeliveredInBothRuns(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	for _, rec := range res.Tasks {
		assert.Equal(t, lab.FateDone, rec.Fate, "mail %s must be delivered, not lost or dead", rec.ID)
	}
	assert.Len(t, res.Tasks, 2*q12Mails)
	require.Len(t, res.Tables, 1, "the side-by-side table")
	assert.Equal(t, []string{"", "no breaker (n..)", "breaker (b..)"}, res.Tables[0].Header)

	// The retry storm: without a breaker the dead service gets many more calls.
	plainDown := len(labtest.OfKind(q12RunOnly(events, "n"), lab.Failed))
	guardedDown := len(labtest.OfKind(q12RunOnly(events, "b"), lab.Failed))
	assert.Greater(t, plainDown, 4*guardedDown, "the breaker must spare the dead service most calls")
	assert.Empty(t, labtest.OfKind(q12RunOnly(events, "n"), lab.Rejected), "no breaker, no fast fails")
}

// q12RunStart is the lesson time the run of prefix started at (its first
// mail's arrival, the outage's zero).
func q12RunStart(events []lab.Event, prefix string) int64 {
	_, start := q12Run(events, prefix)
	return start
}

func q12RunOnly(events []lab.Event, prefix string) []lab.Event {
	run, _ := q12Run(events, prefix)
	return run
}

// TestQ12BreakerCycle follows the breaker through the outage: open, a
// trial every reset timeout while the service is down, closed by the first
// trial after it is back; half-open comes from the reset timer exactly
// ResetTimeout after it opened, naming no mail; no call reaches the
// service while it is open, exactly one while it is half-open.
func TestQ12BreakerCycle(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})
	run, start := q12Run(events, "b")
	reset := int64(10 * time.Second / time.Millisecond)
	outageEnd := start + q12Outage.Until.Milliseconds()

	var notes []string
	var openedAt int64
	state := "closed"
	callsInHalfOpen := 0
	for _, e := range run {
		switch e.Kind {
		case lab.Breaker:
			assert.Equal(t, "breaker", e.Actor)
			notes = append(notes, e.Note)
			switch e.Note {
			case "open":
				assert.NotEmpty(t, e.Task, "opening names the mail whose call caused it")
				openedAt = e.TMs
			case "half_open":
				assert.Empty(t, e.Task, "the timer, not a mail, moves it to half-open")
				assert.Equal(t, openedAt+reset, e.TMs, "half-open exactly one reset timeout after opening")
				callsInHalfOpen = 0
			case "closed":
				assert.NotEmpty(t, e.Task, "closing names the mail whose trial succeeded")
				assert.GreaterOrEqual(t, e.TMs, outageEnd, "only a trial after the outage can succeed")
			}
			state = e.Note
		case lab.Started:
			assert.NotEqual(t, "open", state, "a call reached the service while the breaker was open: %+v", e)
			if state == "half_open" {
				callsInHalfOpen++
				assert.Equal(t, 1, callsInHalfOpen, "half-open lets exactly one trial through")
			}
		case lab.Rejected:
			assert.Equal(t, "open", state, "only an open breaker rejects")
		}
	}
	require.NotEmpty(t, notes)
	assert.Equal(t, "open", notes[0])
	assert.Equal(t, "closed", notes[len(notes)-1])
	for i := 1; i < len(notes); i++ {
		assert.NotEqual(t, notes[i-1], notes[i], "a transition changes the state")
	}
	// The outage lasts 30 s and the reset timeout is 10 s: two trials fail
	// while the service is down, the third closes it.
	assert.Equal(t, []string{"open", "half_open", "open", "half_open", "open", "half_open", "closed"}, notes)
}

// TestQ12RejectedMailsWaitAndReturn: a fast-failed mail is not lost, it
// goes to the wait queue for the seed's 5 s.
func TestQ12RejectedMailsWaitAndReturn(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})
	run, _ := q12Run(events, "b")
	require.NotEmpty(t, labtest.OfKind(run, lab.Rejected))
	for i, e := range run {
		if e.Kind != lab.Rejected {
			continue
		}
		var next *lab.Event
		for j := i + 1; j < len(run); j++ {
			if run[j].Task == e.Task {
				next = &run[j]
				break
			}
		}
		require.NotNil(t, next, "rejected %s has no next event", e.Task)
		assert.Equal(t, lab.Scheduled, next.Kind)
		assert.Equal(t, "email_queue_wait", next.Via)
		assert.Equal(t, "email_queue", next.To)
		assert.Equal(t, q12Wait.Milliseconds(), next.DelayMs)
	}
}

// TestQ12NoTwoMailsArriveAtOnce guards the golden file's determinism: if a
// new arrival and a retry from the wait queue (or two retries) reached
// email_queue at the same instant, goroutine scheduling would pick which
// one the worker takes first.
func TestQ12NoTwoMailsArriveAtOnce(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})
	seen := map[int64]string{}
	for _, e := range events {
		var at int64
		switch e.Kind {
		case lab.Enqueued:
			at = e.TMs
		case lab.Scheduled:
			at = e.TMs + e.DelayMs
		default:
			continue
		}
		if other, dup := seen[at]; dup {
			t.Errorf("%s and %s both reach email_queue at %s", other, e.Task, render.Stamp(at))
		}
		seen[at] = e.Task
	}
}

// TestQ12SameTranscriptAtAnySpeed: the breaker keeps lesson time, so its
// windows and reset timeout land on the same stamps at any --speed.
func TestQ12SameTranscriptAtAnySpeed(t *testing.T) {
	transcript := func(speed float64) string {
		events, res := lessontest.RunInMem(t, Lesson, lesson.Options{Speed: speed})
		var b bytes.Buffer
		render.Transcript(&b, events, res.Tables)
		return b.String()
	}
	slow := transcript(1)
	assert.Equal(t, slow, transcript(50))
	assert.Equal(t, slow, transcript(1000))
}

// TestQ12FifteenDeliveriesThenTheDLQ: when the service never comes back,
// each mail is delivered exactly the seed's 15 times (calls and fast fails
// alike) and parked in the DLQ, with and without the breaker.
func TestQ12FifteenDeliveriesThenTheDLQ(t *testing.T) {
	require.Equal(t, 15, q12MaxDeliveries, "the seed's maxRetries")
	for _, withBreaker := range []bool{false, true} {
		sc := q12Scenario{prefix: "m", mails: 6, every: q12Every, maxDeliveries: q12MaxDeliveries, breaker: withBreaker,
			outage: q12OutageForever}
		var got q12Result
		l := lesson.Lesson{ID: "Q12", InMem: func(ctx context.Context, env *lesson.Env) (err error) {
			got, err = runQ12Scenario(ctx, env, sc)
			return err
		}}
		events, res := lessontest.RunInMem(t, l, lesson.Options{})
		labtest.AssertAccounted(t, events)
		for _, rec := range res.Tasks {
			assert.Equal(t, lab.FateDead, rec.Fate, "mail %s (breaker %v)", rec.ID, withBreaker)
			deliveries := len(labtest.Of(events, rec.ID, lab.Started, lab.Rejected))
			assert.Equal(t, 15, deliveries, "mail %s is delivered 15 times (breaker %v)", rec.ID, withBreaker)
			parked := labtest.Of(events, rec.ID, lab.DeadLettered)
			require.Len(t, parked, 1)
			assert.Equal(t, email.DLQ, parked[0].To)
			assert.Equal(t, "gave up after 15 deliveries", parked[0].Note)
		}
		assert.Equal(t, sc.mails, got.dead)
		assert.Equal(t, sc.mails*15, got.deliveries)
		assert.Equal(t, 15, got.most)
		assert.Zero(t, got.service.Delivered)
		if withBreaker {
			assert.Positive(t, got.rejected, "fast fails spend deliveries too")
			assert.Len(t, labtest.OfKind(events, lab.Rejected), got.rejected)
		}
	}
}

// TestQ12TimeoutTrips: in the outage's slow phase the breaker's 3 s timeout
// cuts the hung call and that failure opens it; without a breaker the
// hung call holds the worker the full 5 s.
func TestQ12TimeoutTrips(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	guarded := q12RunOnly(events, "b")
	opened := guarded[slices.IndexFunc(guarded, func(e lab.Event) bool { return e.Kind == lab.Breaker && e.Note == "open" })]
	cut := labtest.Find(t, guarded, lab.Failed, opened.Task, 1)
	assert.Contains(t, cut.Note, "timed out after 3s")
	started := labtest.Find(t, guarded, lab.Started, opened.Task, 1)
	assert.Equal(t, int64(3000), cut.TMs-started.TMs, "cut off at the timeout, not when the service answered")
	assert.Equal(t, cut.TMs, opened.TMs, "and that failure opened it")

	tb := lessontest.TableTitled(t, res.Tables, "Without and with a circuit breaker")
	plainCut, guardedCut := q12TableCount(t, tb, "calls cut off at the 3 s timeout")
	assert.Zero(t, plainCut)
	assert.Equal(t, 1, guardedCut, "one timeout opens it; the rest fail fast")
	plainHung, _ := q12TableCount(t, tb, "calls while it hung")
	require.Positive(t, plainHung)
	for _, f := range labtest.OfKind(q12RunOnly(events, "n"), lab.Failed) {
		s := labtest.Find(t, events, lab.Started, f.Task, f.Attempt)
		if q12Outage.Hangs(time.Duration(s.TMs-q12RunStart(events, "n")) * time.Millisecond) {
			assert.Equal(t, int64(5000), f.TMs-s.TMs, "without a breaker a hung call takes its full 5 s")
		}
	}
}

// TestQ12DeliveriesAreCountedHonestly: the table's deliveries are every
// call and every fast fail, and each outcome line says which delivery of
// the 15 it was.
func TestQ12DeliveriesAreCountedHonestly(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	tb := lessontest.TableTitled(t, res.Tables, "Without and with a circuit breaker")
	for i, prefix := range []string{"n", "b"} {
		run := q12RunOnly(events, prefix)
		deliveries := len(labtest.OfKind(run, lab.Started)) + len(labtest.OfKind(run, lab.Rejected))
		without, with := q12TableCount(t, tb, "deliveries (calls + fast fails)")
		assert.Equal(t, deliveries, []int{without, with}[i], "run %s", prefix)
		most := 0
		for id := range labtest.Fates(events) {
			if !strings.HasPrefix(id, prefix) {
				continue
			}
			rec := lab.TaskRecord{ID: id}
			n := len(labtest.Of(run, rec.ID, lab.Started, lab.Rejected))
			most = max(most, n)
			last := labtest.Of(run, rec.ID, lab.Succeeded)
			require.Len(t, last, 1)
			assert.Equal(t, fmt.Sprintf("delivery %d of 15", n), last[0].Note, "mail %s", rec.ID)
		}
		without, with = q12TableCount(t, tb, "most deliveries of one mail (of 15)")
		assert.Equal(t, most, []int{without, with}[i], "run %s", prefix)
	}
}

// q12OutageForever: the service is down from the start and never returns.
var q12OutageForever = inmem.Outage{From: 0, Until: time.Hour}

// TestQ12AnnouncesTheBreakerBeforeItsFirstCall: the breaker run opens with
// a task-less breaker event saying closed, before any mail of that run, so
// a renderer counts only the calls the breaker guards; the run without a
// breaker announces none. (Half-open events name no mail either: the
// timer causes them.)
func TestQ12AnnouncesTheBreakerBeforeItsFirstCall(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})
	var announced []lab.Event
	firstB := -1
	for i, e := range events {
		if e.Kind == lab.Breaker && e.Task == "" && e.Note == "closed" {
			announced = append(announced, e)
			assert.Equal(t, -1, firstB, "announced before any mail of the breaker run")
		}
		if firstB < 0 && strings.HasPrefix(e.Task, "b") {
			firstB = i
		}
	}
	require.Len(t, announced, 1, "one breaker, announced once")
	assert.Equal(t, "closed", announced[0].Note)
	assert.Equal(t, "breaker", announced[0].Actor)
}

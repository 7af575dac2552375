package q12

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// q12Run splits a Q12 run's events by task prefix ("n" or "b"), keeping
// task-less events out, and returns the lesson time the run started at.
func q12Run(events []lab.Event, prefix string) (run []lab.Event, start int64) {
	start = -1
	for _, e := range events {
		if e.Kind == lab.Summary || !strings.HasPrefix(e.Task, prefix) {
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
	plainDown := countKind(q12RunOnly(events, "n"), lab.Failed)
	guardedDown := countKind(q12RunOnly(events, "b"), lab.Failed)
	assert.Greater(t, plainDown, 5*guardedDown, "the breaker must spare the dead service most calls")
	assert.Zero(t, countKind(q12RunOnly(events, "n"), lab.Rejected), "no breaker, no fast fails")
}

func q12RunOnly(events []lab.Event, prefix string) []lab.Event {
	run, _ := q12Run(events, prefix)
	return run
}

func countKind(events []lab.Event, k lab.Kind) int {
	n := 0
	for _, e := range events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// TestQ12BreakerCycle follows the breaker through the outage: open, a
// trial every reset timeout while the service is down, closed by the first
// trial after it is back; no call reaches the service while it is open,
// exactly one while it is half-open.
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
			assert.NotEmpty(t, e.Task, "a transition names the task whose call caused it")
			notes = append(notes, e.Note)
			switch e.Note {
			case "open":
				openedAt = e.TMs
			case "half_open":
				assert.GreaterOrEqual(t, e.TMs, openedAt+reset, "half-open no sooner than the reset timeout")
				callsInHalfOpen = 0
			case "closed":
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
	require.NotZero(t, countKind(run, lab.Rejected))
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

// TestQ12MaxTriesToDLQ: when the service never comes back, each mail is
// tried (called or fast-failed) maxTries times and parked in the DLQ.
func TestQ12MaxTriesToDLQ(t *testing.T) {
	for _, withBreaker := range []bool{false, true} {
		sc := q12Scenario{prefix: "m", mails: 6, every: q12Every, maxTries: 3, breaker: withBreaker,
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
		}
		assert.Equal(t, sc.mails, got.dead)
		assert.Zero(t, got.service.Delivered)
		for _, e := range events {
			if e.Kind == lab.DeadLettered {
				assert.Equal(t, "email_queue_dlq", e.To)
			}
		}
		tries := countKind(events, lab.Started) + countKind(events, lab.Rejected)
		assert.Equal(t, sc.mails*sc.maxTries, tries, "every mail is tried exactly maxTries times (breaker %v)", withBreaker)
		if withBreaker {
			assert.Positive(t, got.rejected)
			assert.Equal(t, got.rejected, countKind(events, lab.Rejected))
		}
	}
}

// q12OutageForever: the service is down from the start and never returns.
var q12OutageForever = inmem.Outage{From: 0, Until: time.Hour}

// TestQ12AnnouncesTheBreakerBeforeItsFirstCall: the breaker run opens with
// a task-less breaker event saying closed, before any mail of that run, so
// a renderer counts only the calls the breaker guards; the run without a
// breaker announces none.
func TestQ12AnnouncesTheBreakerBeforeItsFirstCall(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})
	var announced []lab.Event
	firstB := -1
	for i, e := range events {
		if e.Kind == lab.Breaker && e.Task == "" {
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

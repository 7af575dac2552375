package tui

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runQ07 runs lesson 7 the way the TUI does (startRun, the channel sink)
// and returns its events; pauseAt > 0 pauses it that long into the run,
// for hold, using the same command the space key sends.
func runQ07(t *testing.T, pauseAt, hold time.Duration) []lab.Event {
	l, ok := lessons.Find(7)
	require.True(t, ok)
	h, run := startRun(1, l, lesson.Options{Backend: lab.InMem, Speed: 1})
	done := make(chan struct{})
	go func() { run(); close(done) }()
	if pauseAt > 0 {
		time.AfterFunc(pauseAt, func() {
			pauseCmd(h, true)()
			time.AfterFunc(hold, func() { pauseCmd(h, false)() })
		})
	}
	var evs []lab.Event
	for e := range h.events {
		evs = append(evs, e)
	}
	<-done
	return evs
}

// Pausing holds lesson time: a student who pauses during C's 2 s backoff
// reads the same stamps (1 s, then 2 s gaps) as a run nobody paused.
func TestPauseHoldsQ07sLessonTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plain := runQ07(t, 0, 0)
		start := time.Now()
		paused := runQ07(t, 2*time.Second, 30*time.Second)
		require.Len(t, paused, len(plain))
		for i := range plain {
			assert.Equal(t, plain[i].TMs, paused[i].TMs, "event %d (%s %s)", i, plain[i].Kind, plain[i].Task)
		}
		assert.GreaterOrEqual(t, time.Since(start), 30*time.Second, "the pause really held the run")
		var retries []int64
		for _, e := range paused {
			if e.Task == "C" && (e.Kind == lab.Failed || e.Kind == lab.Started) {
				retries = append(retries, e.TMs)
			}
		}
		require.Len(t, retries, 6)
		assert.Equal(t, []int64{1000, 2000}, []int64{retries[2] - retries[1], retries[4] - retries[3]}, "C's backoff gaps read 1 s and 2 s")
	})
}

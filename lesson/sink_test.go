package lesson_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/q07"
)

// stuckView is a reader that stops reading until its run ends: a TUI
// whose terminal stopped drawing, an HTTP client that stalled.
type stuckView struct{ ctx context.Context }

func (v stuckView) Emit(lab.Event) { <-v.ctx.Done() }

// A reader that stops reading does not stall the lesson: Q07 runs to its
// end on lesson time, every task accounted for, and the Result counts
// what the reader missed.
func TestStuckReaderDoesNotStallALesson(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		view := lab.NewBounded(stuckView{ctx}, 8)
		rec := &labtest.Recorder{}
		done := make(chan lesson.Result)
		go func() {
			res, err := lesson.Run(ctx, q07.Lesson, lesson.Options{Backend: lab.InMem}, view, rec)
			assert.NoError(t, err)
			done <- res
		}()
		time.Sleep(time.Hour) // lesson time passes: far more than Q07 takes
		synctest.Wait()       // the lesson ran to its summaries, the reader still stuck
		events := rec.Events()
		require.NotEmpty(t, labtest.OfKind(events, lab.Summary), "the lesson finished without its reader")
		labtest.AssertAccounted(t, events)
		cancel() // the reader goes away; Run returns
		res := <-done
		assert.Equal(t, len(events)-9, res.Missed, "all but the buffer and the event in hand are missed, and counted")
		assert.Equal(t, view.Missed(), res.Missed)
	})
}

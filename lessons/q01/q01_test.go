package q01

import (
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/stretchr/testify/assert"
)

func TestQ01FastRetry(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})

	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDropped, fate, "the lesson's bound drops the poison task, and says so: no queue holds it")
	assert.Contains(t, labtest.Find(t, events, lab.Dropped, "C", MaxAttempts).Note, "the lesson's bound, not the design")
	assert.Equal(t, MaxAttempts, attempts)
	for _, id := range []string{"A", "B", "D"} {
		fate, attempts := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 1, attempts, id)
	}

	// The order changed: D finishes before C's second attempt starts.
	var secondC int64 = -1
	for _, e := range events {
		if e.Kind == lab.Started && e.Task == "C" && e.Attempt == 2 {
			secondC = e.TMs
		}
	}
	assert.Less(t, labtest.FirstAt(t, events, lab.Succeeded, "D"), secondC+1)
	assert.Equal(t, int64(400), labtest.FirstAt(t, events, lab.Succeeded, "D"), "four 100 ms attempts before D is done")
	assert.Len(t, res.Tables, 1, "the lesson reports the poison loop")
}

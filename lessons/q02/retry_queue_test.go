package q02

import (
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/render"
	"github.com/stretchr/testify/assert"
)

func TestQ02RetryQueue(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})

	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDropped, fate, "the retry worker's failure is final")
	assert.Equal(t, 2, attempts, "one attempt on the main queue, one on the retry queue")
	for _, id := range []string{"A", "B", "D"} {
		fate, attempts := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 1, attempts, id)
	}
	assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Started, lab.Failed, lab.Moved, lab.Started, lab.Failed, lab.Dropped}, labtest.Kinds(events, "C"))

	failed := labtest.Find(t, events, lab.Failed, "C", 1)
	moved := labtest.Find(t, events, lab.Moved, "C", 0)
	assert.Equal(t, "Sequential-Worker", moved.Actor)
	assert.Equal(t, "queue", moved.Queue)
	assert.Equal(t, "retryQueue", moved.To)

	// The main worker goes on with D the moment C fails, and D is under way
	// before C's retry has finished.
	startD := labtest.Find(t, events, lab.Started, "D", 1)
	retried := labtest.Find(t, events, lab.Failed, "C", 2)
	assert.Equal(t, failed.TMs, startD.TMs, "D starts right after C fails")
	assert.Less(t, startD.TMs, retried.TMs, "D starts before C's retry finishes")
	assert.Equal(t, int64(300), startD.TMs, "A and B took 100 ms each, C's first attempt 100 ms")
	assert.Equal(t, int64(400), labtest.Find(t, events, lab.Succeeded, "D", 1).TMs, "D is not held up by C")

	retry := labtest.Find(t, events, lab.Started, "C", 2)
	assert.Equal(t, "Retry-Worker", retry.Actor)
	assert.Equal(t, "retryQueue", retry.Queue)
	assert.Equal(t, failed.TMs, retry.TMs, "the Retry-Worker picks C up at once")

	dropped := labtest.Find(t, events, lab.Dropped, "C", 2)
	assert.Equal(t, "Retry-Worker", dropped.Actor)
	assert.Contains(t, dropped.Note, "no retries left")
	// Dropped, not lost: the log names the decision (the glossary's words).
	line := render.Style{}.Line(dropped)
	assert.Contains(t, line, "dropped: C (discarded on purpose", "the log says it plainly")
	assert.NotContains(t, line, "lost")
}

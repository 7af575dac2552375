package q08

import (
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQ08DeadLetter(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})

	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDead, fate, "C is parked, not dropped")
	assert.Equal(t, 3, attempts)
	assert.NotContains(t, labtest.Kinds(events, "C"), lab.Dropped)

	// C is dead-lettered by the last retry worker, right after its third
	// failure, and the backoff waits are Q07's.
	var dl lab.Event
	for _, e := range events {
		if e.Kind == lab.DeadLettered {
			dl = e
		}
	}
	assert.Equal(t, "C", dl.Task)
	assert.Equal(t, "Second-Retry-Worker", dl.Actor)
	assert.Equal(t, "secondRetryQueue", dl.Queue)
	assert.Equal(t, "deadLetterQueue", dl.To)
	assert.Equal(t, int64(3500), dl.TMs, "300 ms + 1 s + 100 ms + 2 s + 100 ms")

	// The run ends with C still held in the DLQ.
	require.Len(t, res.Tables, 1)
	assert.Equal(t, [][]string{{"deadLetterQueue", "C", "1"}}, res.Tables[0].Rows)
}

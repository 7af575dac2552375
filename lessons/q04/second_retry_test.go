package q04

import (
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/stretchr/testify/assert"
)

func TestQ04SecondRetryQueue(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})

	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDropped, fate)
	assert.Equal(t, 3, attempts, "main queue, retry queue, second retry queue")
	for _, id := range []string{"A", "B", "D"} {
		fate, attempts := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 1, attempts, id)
	}

	// C's path reads like the seed's Q4 log: who did what, in order.
	type step struct {
		actor string
		kind  lab.Kind
		queue string
	}
	var path []step
	for _, e := range events {
		if e.Task == "C" && e.Kind != lab.Summary {
			path = append(path, step{e.Actor, e.Kind, e.Queue})
		}
	}
	assert.Equal(t, []step{
		{"Producer", lab.Enqueued, "queue"},
		{"Sequential-Worker", lab.Started, "queue"},
		{"Sequential-Worker", lab.Failed, "queue"},
		{"Sequential-Worker", lab.Moved, "queue"},
		{"Retry-Worker", lab.Started, "retryQueue"},
		{"Retry-Worker", lab.Failed, "retryQueue"},
		{"Retry-Worker", lab.Moved, "retryQueue"},
		{"Second-Retry-Worker", lab.Started, "secondRetryQueue"},
		{"Second-Retry-Worker", lab.Failed, "secondRetryQueue"},
		{"Second-Retry-Worker", lab.Dropped, "secondRetryQueue"},
	}, path)
	assert.Equal(t, "secondRetryQueue", labtest.Find(t, events, lab.Moved, "C", 2).To)

	// Each retry follows the failure before it at once; D is done while C
	// is still being retried.
	assert.Equal(t, labtest.Find(t, events, lab.Failed, "C", 1).TMs, labtest.Find(t, events, lab.Started, "C", 2).TMs)
	assert.Equal(t, labtest.Find(t, events, lab.Failed, "C", 2).TMs, labtest.Find(t, events, lab.Started, "C", 3).TMs)
	assert.Equal(t, int64(400), labtest.Find(t, events, lab.Succeeded, "D", 1).TMs)
	assert.Equal(t, int64(500), labtest.Find(t, events, lab.Dropped, "C", 3).TMs)
}

func TestRetryLevelNames(t *testing.T) {
	q, w := retryLevel(1)
	assert.Equal(t, []string{"retryQueue", "Retry-Worker"}, []string{q, w})
	q, w = retryLevel(2)
	assert.Equal(t, []string{"secondRetryQueue", "Second-Retry-Worker"}, []string{q, w})
	q, w = retryLevel(7)
	assert.Equal(t, []string{"retry7Queue", "Retry-7-Worker"}, []string{q, w})
}

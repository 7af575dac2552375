package lessons

import (
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/stretchr/testify/assert"
)

func TestQ01FastRetry(t *testing.T) {
	events, res := runInMem(t, q01, Options{})

	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FatePending, fate, "the poison task is still looping when the lesson stops it")
	assert.Equal(t, q01MaxAttempts, attempts)
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

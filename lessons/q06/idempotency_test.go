package q06

import (
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQ06Idempotency(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})

	// Every task is delivered twice and ends done.
	for _, id := range []string{"A", "B", "C", "D"} {
		fate, attempts := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 2, attempts, id)
	}
	// A has no guard: both deliveries succeed and send mail.
	assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Started, lab.Succeeded, lab.Redelivered, lab.Started, lab.Succeeded}, labtest.Kinds(events, "A"))
	// B, C, D: the second delivery is skipped as a duplicate.
	for _, id := range []string{"B", "C", "D"} {
		assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Started, lab.Succeeded, lab.Redelivered, lab.Started, lab.Duplicate}, labtest.Kinds(events, id), id)
	}

	require.Len(t, res.Tables, 1)
	assert.Equal(t, [][]string{
		{"none", "A", "2", "2"},
		{"processed-ID set", "B", "2", "1"},
		{"conditional state transition", "C", "2", "1"},
		{"stored result", "D", "2", "1"},
	}, res.Tables[0].Rows)
}

// Each guard, driven directly: the effect runs on the first call per id
// only (except noGuard), and the stored-result guard replays the result.
func TestQ06Guards(t *testing.T) {
	for _, g := range q06Guards() {
		t.Run(g.Name(), func(t *testing.T) {
			runs := 0
			effect := func() string { runs++; return "r" + string(rune('0'+runs)) }
			r1, skip1 := g.Once("X", effect)
			r2, skip2 := g.Once("X", effect)
			_, skipY := g.Once("Y", effect)
			assert.Equal(t, "r1", r1)
			assert.Empty(t, skip1)
			assert.Empty(t, skipY, "another id is not a duplicate")
			if _, unguarded := g.(noGuard); unguarded {
				assert.Equal(t, 3, runs)
				assert.Empty(t, skip2)
				return
			}
			assert.Equal(t, 2, runs, "X once, Y once")
			assert.NotEmpty(t, skip2, "the repeat says why it was skipped")
			if _, stored := g.(storedResult); stored {
				assert.Equal(t, "r1", r2, "a repeat gets the stored result")
			}
		})
	}
}

package template

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
)

// TestTemplateRuns runs the template on both backends (the broker's when
// one answers): C fails three times and parks, the others are done once.
func TestTemplateRuns(t *testing.T) {
	for _, b := range Lesson.Backends() {
		t.Run(string(b), func(t *testing.T) {
			events, _ := lessontest.On(t, b, Lesson, lesson.Options{})
			for _, id := range []string{"A", "B", "D"} {
				fate, attempts := labtest.Summary(t, events, id)
				assert.Equal(t, lab.FateDone, fate, id)
				assert.Equal(t, 1, attempts, id)
			}
			fate, attempts := labtest.Summary(t, events, "C")
			assert.Equal(t, lab.FateDead, fate)
			assert.Equal(t, maxAttempts, attempts)
			waits := labtest.Of(events, "C", lab.Scheduled)
			require.Len(t, waits, maxAttempts-1)
			assert.Equal(t, waitQueue, waits[0].Via)
		})
	}
}

package template

import (
	"os"
	"strings"
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

// contributingMarker is the CONTRIBUTING.md line the quoted template
// follows.
const contributingMarker = "<!-- quoted from lessons/template/template.go -->"

// TestContributingQuotesTheTemplate: the template CONTRIBUTING.md shows is
// this package's file, byte for byte, so the recipe quotes code that
// compiles and runs. A stale quote fails with the command that fixes it;
// -update rewrites the quote from the file.
func TestContributingQuotesTheTemplate(t *testing.T) {
	src, err := os.ReadFile("template.go")
	require.NoError(t, err)
	doc, err := os.ReadFile("../../CONTRIBUTING.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(doc), contributingMarker+"\n\n```go\n")
	require.True(t, ok, "CONTRIBUTING.md has no %q followed by a blank line and a ```go fence", contributingMarker)
	quoted, _, ok := strings.Cut(after, "\n```\n")
	require.True(t, ok, "the quoted template's fence is never closed")
	if labtest.Updating() {
		i := strings.Index(string(doc), after)
		out := string(doc[:i]) + string(src) + string(doc[i+len(quoted)+1:])
		require.NoError(t, os.WriteFile("../../CONTRIBUTING.md", []byte(out), 0o644))
		return
	}
	if quoted+"\n" != string(src) {
		t.Fatalf("CONTRIBUTING.md quotes another lessons/template/template.go (the file is the source): " +
			"go test ./lessons/template -run Contributing -update")
	}
}

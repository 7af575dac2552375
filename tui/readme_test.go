package tui

import (
	"context"
	"os"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeFrameMarker is the line of docs/cli.md the example frame follows.
const readmeFrameMarker = "Lesson 1 at 80×24, as C goes back to the tail of its queue"

// framePage is the page that shows the frame, from this package.
const framePage = "../docs/cli.md"

// TestReadmeFrame draws docs/cli.md's example frame from a real run of
// lesson 1 (in a synctest bubble, so its events are exact): the frame
// cannot drift from the TUI. -update rewrites the page's block.
func TestReadmeFrame(t *testing.T) {
	l, err := lessons.Parse("1")
	require.NoError(t, err)
	var rec lab.Recorder
	synctest.Test(t, func(t *testing.T) {
		_, err := lesson.Run(context.Background(), l, lesson.Options{}, &rec)
		require.NoError(t, err)
	})
	// Up to D's start just after C went back to the tail.
	end := -1
	for i, e := range rec.Events {
		if e.Kind == lab.Moved && e.Task == "C" {
			end = i
		}
		if end >= 0 && e.Kind == lab.Started && e.Task == "D" {
			end = i
			break
		}
	}
	require.GreaterOrEqual(t, end, 0, "lesson 1 re-enqueues C before D starts")
	m := feed(testModel(l, 80, 24), rec.Events[:end+1]...)
	frame := trimLines(frames(m, 5).View())

	readme, err := os.ReadFile(framePage)
	require.NoError(t, err)
	start, stop := readmeBlock(t, string(readme), readmeFrameMarker)
	if labtest.Updating() {
		out := string(readme[:start]) + frame + "\n" + string(readme[stop:])
		require.NoError(t, os.WriteFile(framePage, []byte(out), 0o644))
		return
	}
	assert.Equal(t, string(readme[start:stop]), frame+"\n", "docs/cli.md's TUI frame is stale: go test ./tui -run ReadmeFrame -update")
}

// trimLines drops the spaces the view pads lines with: the page has none.
func trimLines(frame string) string {
	lines := strings.Split(frame, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// readmeBlock finds the body of the fenced block that follows marker in
// the page: its first and one-past-last byte.
func readmeBlock(t *testing.T, readme, marker string) (start, stop int) {
	t.Helper()
	i := strings.Index(readme, marker)
	require.GreaterOrEqual(t, i, 0, "%s has no %q", framePage, marker)
	open := strings.Index(readme[i:], "```")
	require.GreaterOrEqual(t, open, 0)
	start = i + open + strings.Index(readme[i+open:], "\n") + 1
	end := strings.Index(readme[start:], "```")
	require.GreaterOrEqual(t, end, 0)
	return start, start + end
}

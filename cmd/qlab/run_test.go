package main

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons"
)

// TestRunPrintsTheNoticeOfItsBackend: lesson 10 run in memory says what
// is true in memory, not the broker's story.
func TestRunPrintsTheNoticeOfItsBackend(t *testing.T) {
	l, err := lessons.Parse("10")
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		code, out, errOut := qlab("run", "10", "--backend", "inmem", "--no-color")
		require.Equal(t, exitOK, code, errOut)
		flat := strings.Join(strings.Fields(out), " ") // the notice wraps to 80 columns
		assert.Contains(t, flat, "What to notice: "+l.NoticeFor(lab.InMem))
		assert.NotContains(t, flat, l.NoticeFor(lab.Rabbit))
	})
}

package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
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

// TestRunThatLostTasksExitsOne: a run that loses tasks its lesson does not
// lose on purpose exits 1 with one line naming them and their reasons.
// Lesson 10's in-memory process dies here though nobody asked for it.
func TestRunThatLostTasksExitsOne(t *testing.T) {
	l, err := lessons.Parse("10")
	require.NoError(t, err)
	inner := l.InMem
	l.InMem = func(ctx context.Context, env *lesson.Env) error {
		env.Interrupt = 2 * time.Second // an unplanned crash: memory loses what it held
		return inner(ctx, env)
	}
	saved := slices.Clone(lessons.All)
	t.Cleanup(func() { lessons.All = saved })
	lessons.All[slices.IndexFunc(lessons.All, func(x lesson.Lesson) bool { return x.ID == l.ID })] = l
	synctest.Test(t, func(t *testing.T) {
		code, _, errOut := qlab("run", "10", "--backend", "inmem", "--no-color")
		assert.Equal(t, exitError, code)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		require.Len(t, lines, 1, errOut)
		t.Log(lines[0])
		assert.Regexp(t, `^qlab: .*lesson 10 lost \d+ tasks?: .*\(process died`, lines[0])
	})
}

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/render"
)

func TestCompareRepeatIsBounded(t *testing.T) {
	for _, n := range []string{"0", "21", "-1"} {
		code, _, errOut := qlab("compare", "10", "--repeat", n)
		assert.Equal(t, exitUsage, code, n)
		assert.Contains(t, errOut, "--repeat must be between 1 and 20, got "+n)
	}
}

// TestCompareHelpNamesTheLessonsOwnSpeeds: without --speed, compare runs
// Q14 (the seed's minutes) at its own speed, and the help says so.
func TestCompareHelpNamesTheLessonsOwnSpeeds(t *testing.T) {
	code, out, _ := qlab("compare", "--help")
	require.Equal(t, exitOK, code)
	out = strings.Join(strings.Fields(out), " ") // the help wraps
	assert.Contains(t, out, "goes at its own (400× for 14) (default 20)")
}

// TestCompareNotesWrapWhole: compare's notes come wrapped at 96 columns
// (continuations indented); printed for a pipe they wrap again as whole
// notes at 80, with no line broken short where a piece ended.
func TestCompareNotesWrapWhole(t *testing.T) {
	note := []string{
		"Timing-sensitive lesson, so only fates are compared: whether a retry lands inside the outage,",
		"  what the breaker's window holds, and (with a fail rate) which mails spend their deliveries on",
		"  fast fails depend on when calls happen: real time on the broker.",
	}
	var b strings.Builder
	writeCompared(&b, render.Table{Title: "Per task", Header: []string{"task"}, Rows: [][]string{{"n01"}}, Notes: note}, render.LayoutFor(0))
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")[3:] // the notes' lines
	require.Greater(t, len(lines), 2)
	for _, l := range lines[:len(lines)-1] {
		assert.Greater(t, render.Width(l), 70, "a line broken short:\n%s", b.String())
		assert.LessOrEqual(t, render.Width(l), render.DefaultWidth)
	}
	assert.Equal(t, strings.Fields(strings.Join(note, " ")), strings.Fields(strings.Join(lines, " ")))
}

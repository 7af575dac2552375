package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/exercises"
	"github.com/queuelab/qlab/exercises/check"
)

// What a check came to is read from go test's exit and output: a
// compiler error, a timeout, a deadlock or a panic is named as such.
func TestClassifyNamesEachOutcome(t *testing.T) {
	exit := exec.Command("false").Run()
	ex := exercises.All[0]
	fail := exRun{Ex: ex, Results: []check.Result{{Check: "x"}}}
	for out, want := range map[string]exStatus{
		"./requeue.go:3:2: undefined: y\nFAIL\tpkg [build failed]\n":                        exBuild,
		"panic: test timed out after 20s\n":                                                 exTimeout,
		"panic: deadlock: main bubble goroutine has exited but blocked goroutines remain\n": exDeadlock,
		"panic: runtime error: index out of range\n":                                        exCrash,
	} {
		assert.Equal(t, want, classify(exRun{Ex: ex, Output: out}, exit), out)
	}
	assert.Equal(t, exFail, classify(fail, exit))
	assert.Equal(t, exPass, classify(exRun{Ex: ex, Results: []check.Result{{Check: "x", Pass: true}}}, nil))
	assert.Equal(t, exSkip, classify(exRun{Ex: ex, Results: []check.Result{{Check: "setup", Skip: "no broker"}}}, nil))
	report := exReport(exRun{Ex: ex, Status: exBuild, Output: "./requeue.go:3:2: undefined: y\nFAIL\tpkg [build failed]\n"}, false)
	assert.Contains(t, report, "./requeue.go:3:2: undefined: y", "compiler errors are shown unaltered")
}

// Progress survives a save and load; a pass marks an exercise done, a
// later failure (or a reset) takes it off again.
func TestExStateRoundTrip(t *testing.T) {
	root := t.TempDir()
	st := loadExState(root)
	require.Equal(t, exercises.All[0].Dir, st.Current)
	st.record(exRun{Ex: exercises.All[0], Status: exPass})
	st.Hints[exercises.All[1].Dir] = 2
	st.Current = exercises.All[1].Dir
	require.NoError(t, st.save(root))
	got := loadExState(root)
	assert.Equal(t, []string{exercises.All[0].Dir}, got.Done)
	assert.Equal(t, 2, got.Hints[exercises.All[1].Dir])
	next, ok := got.next()
	assert.True(t, ok)
	assert.Equal(t, exercises.All[2].Dir, next.Dir)
	got.record(exRun{Ex: exercises.All[0], Status: exFail})
	assert.Empty(t, got.Done)
}

// qlab ex refuses bad numbers in one line, with the usage exit code.
func TestExBadArguments(t *testing.T) {
	for _, args := range [][]string{{"ex", "check"}, {"ex", "check", "x"}, {"ex", "check", "99"}, {"ex", "nope"}, {"ex", "list", "--json"}} {
		code, _, stderr := qlab(args...)
		assert.Equal(t, exitUsage, code, args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
	}
}

// After r the watch screen asks before it resets, in full at 80 columns:
// the question is not cut at the edge, and every line fits.
func TestExResetAsksInFull(t *testing.T) {
	ex := exercises.All[3]
	m := exModel{ex: ex, st: exState{Hints: map[string]int{}}, width: 80, height: 24,
		last: &exRun{Ex: ex, Status: exFail, Results: []check.Result{{Check: "x", Plan: "p", Got: "g", Want: "w"}}}}
	next, _ := m.key("r")
	view := next.View()
	assert.Contains(t, strings.ReplaceAll(view, "\n", " "), "Reset "+ex.Path()+" to the shipped stub? Your edits are lost.")
	assert.Contains(t, view, "y reset")
	for _, l := range strings.Split(view, "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 80, l)
	}
	after, _ := next.(exModel).key("x")
	assert.Contains(t, after.View(), "reset cancelled")
}

// A failing check says so on stderr in one line, under the report.
func TestExNotYetSummary(t *testing.T) {
	ex := exercises.All[3]
	r := exRun{Ex: ex, Status: exFail, Results: []check.Result{{Check: "a", Pass: true}, {Check: "b"}}}
	assert.Equal(t, "exercise 4 (Q06) not passed yet: 1 of 2 checks fail", notYet(r).Error())
	r.Status = exBuild
	assert.Equal(t, "exercise 4 (Q06) not passed yet: it does not compile", notYet(r).Error())
}

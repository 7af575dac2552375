package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// A fake checkout: a go.mod naming the module, so qlab ex finds its root
// there and writes its progress there, not in the real clone.
func fakeCheckout(t *testing.T) string {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/queuelab/qlab\n"), 0o644))
	t.Chdir(root)
	return root
}

// qlab ex 5 opens exercise 5 (it becomes the current one); qlab ex 99 is
// refused in one line.
func TestExNumberOpensThatExercise(t *testing.T) {
	root := fakeCheckout(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // watch mode ends at once; what it opened is in the state
	require.NoError(t, cmdEx(ctx, []string{"5"}, io.Discard, io.Discard))
	assert.Equal(t, exercises.All[4].Dir, loadExState(root).Current)
	err := cmdEx(ctx, []string{"99"}, io.Discard, io.Discard)
	var usage usageError
	require.ErrorAs(t, err, &usage)
	assert.Contains(t, err.Error(), "no exercise 99")
}

// In watch mode's list, ↓ and enter open the exercise under the cursor.
func TestExListIsSelectable(t *testing.T) {
	root := fakeCheckout(t)
	m := exModel{root: root, ex: exercises.All[0], st: exState{Hints: map[string]int{}}, width: 80, height: 24}
	next, _ := m.key("l")
	assert.Contains(t, next.View(), "›▶  1 ", "the cursor starts on the current exercise")
	assert.Contains(t, next.View(), "enter open")
	for range 3 {
		next, _ = next.(exModel).key("down")
	}
	next, cmd := next.(exModel).key("enter")
	got := next.(exModel)
	assert.Equal(t, exercises.All[3].Dir, got.ex.Dir)
	assert.Equal(t, exShowResult, got.mode)
	assert.True(t, got.running, "the chosen exercise is checked")
	assert.NotNil(t, cmd)
	next, _ = got.key("l")
	next, _ = next.(exModel).key("7")
	assert.Equal(t, 6, next.(exModel).cursor, "a digit moves the cursor to that exercise")
}

// At 80x24 the list of every exercise does not fit: it scrolls so the
// cursor's row always shows, says how many rows are cut off, and never
// runs past the screen, moving down through the list, round to the top
// and up from there.
func TestExListScrollsWithTheCursor(t *testing.T) {
	require.Greater(t, len(exercises.All), 16, "a list that fits needs no scrolling: test at a smaller height")
	m := exModel{root: fakeCheckout(t), ex: exercises.All[0], st: exState{Hints: map[string]int{}}, width: 80, height: 24}
	next, _ := m.key("l")
	moves := append(slices.Repeat([]string{"down"}, len(exercises.All)), slices.Repeat([]string{"up"}, 3)...)
	for i, k := range moves {
		next, _ = next.(exModel).key(k)
		got := next.(exModel)
		ex := exercises.All[got.cursor]
		view := got.View()
		lines := strings.Split(view, "\n")
		require.LessOrEqual(t, len(lines), 24, "after %d keys the view runs past 24 lines:\n%s", i+1, view)
		cursorRow := ""
		for _, l := range lines {
			if strings.HasPrefix(l, "›") {
				cursorRow = l
			}
		}
		assert.Contains(t, cursorRow, fmt.Sprintf("%2d %s ", ex.Number(), ex.Lesson), "after %d keys the cursor's row (exercise %d) is not shown:\n%s", i+1, ex.Number(), view)
		hidden := 0
		for _, l := range lines {
			var k int
			if _, err := fmt.Sscanf(strings.TrimLeft(l, " ↑↓"), "%d more", &k); err == nil {
				hidden += k
			}
			assert.LessOrEqual(t, len([]rune(l)), 80, "a line wider than the screen")
		}
		shown := strings.Count(view, " Q") // every row names its lesson: " Q21 …"
		assert.Equal(t, len(exercises.All), shown+hidden, "the rows shown and the ones said to be cut off are the whole list:\n%s", view)
	}
	assert.Equal(t, len(exercises.All)-3, next.(exModel).cursor, "down the whole list, round to the top, and up 3: the bottom's third row")
}

// In the list, digits spell a number: "1" then "7" is 17; a digit that
// makes no number with the one before starts a new one; ↓ in between
// starts afresh.
func TestExListTakesTwoDigitNumbers(t *testing.T) {
	m := exModel{root: fakeCheckout(t), ex: exercises.All[0], st: exState{Hints: map[string]int{}}, width: 80, height: 24}
	next, _ := m.key("l")
	at := func(keys ...string) int {
		for _, k := range keys {
			next, _ = next.(exModel).key(k)
		}
		return exercises.All[next.(exModel).cursor].Number()
	}
	assert.Equal(t, 1, at("1"))
	assert.Equal(t, 17, at("7"), "1 then 7")
	assert.Equal(t, 7, at("7"), "177 is no exercise: 7 starts afresh")
	assert.Equal(t, 5, at("2", "5"), "25 is no exercise")
	assert.Equal(t, 3, at("1", "down", "3"), "a key between the digits: 3, not 13")
	view := next.View()
	assert.Contains(t, view, "›   3 Q")
}

// Watch mode writes only what it changed: progress another terminal
// saved meanwhile (qlab ex check 5 passing) survives its next save.
func TestExWatchKeepsProgressFromAnotherTerminal(t *testing.T) {
	root := fakeCheckout(t)
	m := exModel{root: root, ex: exercises.All[0], st: loadExState(root), running: true, width: 80, height: 24}
	_, err := updateExState(root, func(st *exState) { st.record(exRun{Ex: exercises.All[4], Status: exPass}) })
	require.NoError(t, err)
	_, save := m.Update(exChecked{exRun{Ex: exercises.All[0], Status: exPass}})
	require.NotNil(t, save)
	saved, ok := save().(exSaved)
	require.True(t, ok)
	require.NoError(t, saved.err)
	assert.ElementsMatch(t, []string{exercises.All[0].Dir, exercises.All[4].Dir}, loadExState(root).Done)
	assert.ElementsMatch(t, []string{exercises.All[0].Dir, exercises.All[4].Dir}, saved.st.Done, "the screen shows the merged progress")
}

// Saves from many goroutines at once (two terminals, many saves) all land.
func TestExStateUpdatesDoNotLoseEachOther(t *testing.T) {
	root := fakeCheckout(t)
	var wg sync.WaitGroup
	for _, ex := range exercises.All {
		wg.Go(func() {
			_, err := updateExState(root, func(st *exState) { st.record(exRun{Ex: ex, Status: exPass}) })
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.Len(t, loadExState(root).Done, len(exercises.All))
	assert.NoFileExists(t, filepath.Join(root, exStateFile+".lock"))
}

// Every line of check-all --json says whose run it is: name (--name, else
// $USER), commit, host and time.
func TestExCheckAllJSONSaysWhoseRunItIs(t *testing.T) {
	t.Setenv("USER", "ada")
	exName = ""
	w := exWho(".")
	assert.Equal(t, "ada", w.Name)
	host, _ := os.Hostname()
	assert.Equal(t, host, w.Host)
	_, err := time.Parse(time.RFC3339, w.Time)
	assert.NoError(t, err)
	if _, err := exec.LookPath("git"); err == nil {
		assert.Regexp(t, `^[0-9a-f]{12}(\+changes)?$`, w.Commit, "this test runs inside the clone")
	}
	exName = "grace"
	t.Cleanup(func() { exName = "" })
	b, err := json.Marshal(exStatusLine{exWhoFields: exWho("."), N: 1, Dir: "01_requeue", Status: exPass})
	require.NoError(t, err)
	var line map[string]any
	require.NoError(t, json.Unmarshal(b, &line))
	for _, k := range []string{"name", "commit", "host", "time", "n", "status"} {
		assert.Contains(t, line, k)
	}
	assert.Equal(t, "grace", line["name"])
	code, _, stderr := qlab("ex", "list", "--name", "x")
	assert.Equal(t, exitUsage, code, stderr)
}

// n moves on to the next exercise in the list, and wraps round.
func TestExNextFollowsTheList(t *testing.T) {
	all := exercises.All
	for i, ex := range all {
		st := exState{Current: ex.Dir, Hints: map[string]int{}}
		next, ok := st.next()
		require.True(t, ok)
		assert.Equal(t, all[(i+1)%len(all)].Dir, next.Dir, "after %s", ex.Dir)
	}
}

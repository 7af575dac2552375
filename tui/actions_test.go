package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/lessons/q21"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeActs is a lesson that exists only in these tests: it takes one key
// of its own (x), answers it, and ends when x came or its bound passed.
var fakeActs = lesson.Lesson{
	ID:      "Q97",
	Title:   "Test keys: a lesson that takes x",
	Notice:  "Press x.",
	Actions: []lesson.Action{{Key: "x", Help: "poke"}},
	InMem: func(ctx context.Context, env *lesson.Env) error {
		env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: "main", Actor: "Producer"})
		select {
		case a := <-env.Act:
			a.Reply("poked")
			env.Stream.Emit(lab.Event{Kind: lab.Succeeded, Task: "A", Queue: "main", Actor: "Worker", Attempt: 1})
		case <-time.After(time.Minute):
		case <-ctx.Done():
		}
		return nil
	},
}

// runningOn is a model showing lesson l at w×h with run h as its run.
func runningOn(t *testing.T, l lesson.Lesson, w, ht int, h *runHandle) Model {
	t.Helper()
	m, err := New(Config{Lessons: []lesson.Lesson{l}, Start: l.Number(), Backend: l.DefaultBackend(),
		Broker: func(context.Context) (string, error) { return "", errors.New("not in this test") }})
	require.NoError(t, err)
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: ht})
	m = next.(Model)
	m.run.state, m.run.h, m.run.gen = running, h, h.gen
	return m
}

func press(m Model, k string) (Model, tea.Cmd) {
	next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
	return next.(Model), cmd
}

// The lesson's own keys show in the help line only for a lesson that
// declares them, only while it runs, and the line fits 80 columns.
func TestActionKeysInTheHelpLine(t *testing.T) {
	k := newKeyMap()
	acts := actionKeys(q21.Actions)
	for _, w := range []int{80, 100, 160} {
		line := lipgloss.Width(helpText(k.helpFor(running, w, acts)))
		assert.LessOrEqual(t, line, w, "the help line at %d columns", w)
		assert.Contains(t, helpText(k.helpFor(running, w, acts)), "k stop leader • v revive", "at %d", w)
		assert.Contains(t, helpText(k.helpFor(running, w, acts)), "q quit", "at %d", w)
		assert.NotContains(t, helpText(k.helpFor(running, w, nil)), "stop leader", "a lesson without actions, at %d", w)
		assert.NotContains(t, helpText(k.helpFor(finished, w, acts)), "stop leader", "once the run ended, at %d", w)
	}
	assert.Equal(t, "space pause • i notice • r restart • n/p lesson • b backend • esc menu • q quit",
		helpText(k.helpFor(running, 80, nil)), "a lesson without actions keeps its line")
	assert.Equal(t, "space pause • k stop leader • v revive • i notice • r restart • q quit",
		helpText(k.helpFor(running, 80, acts)))
	assert.Contains(t, helpText(k.helpFor(running, 160, acts)), "m metrics", "a wide screen has room for all")
}

// helpText is the help line the view draws for keys (without colour).
func helpText(keys []key.Binding) string {
	return ansi.Strip(help.New().ShortHelpView(keys))
}

// Q21's view at 80×24 lists k and v, and no line is wider than the screen.
func TestQ21ViewFitsWithItsKeys(t *testing.T) {
	h := &runHandle{gen: 1, act: make(chan lesson.Act), finished: make(chan struct{})}
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		m := runningOn(t, q21.Lesson, size[0], size[1], h)
		lines := strings.Split(m.View(), "\n")
		assert.Contains(t, lines[len(lines)-1], "k stop leader • v revive", "%v", size)
		for _, line := range lines {
			assert.LessOrEqual(t, lipgloss.Width(line), size[0], line)
		}
	}
}

// No lesson's own key shadows one of the TUI's: the TUI's win, so such a
// key would never reach the lesson.
func TestActionKeysAreTheLessonsOwn(t *testing.T) {
	k := newKeyMap()
	own := []key.Binding{k.Pause, k.Faster, k.Slower, k.Restart, k.Next, k.Prev, k.Backend,
		k.Results, k.Notice, k.Metrics, k.Menu, k.Quit, k.Cut, k.Hold}
	for _, l := range lessons.All {
		for _, a := range l.Actions {
			msg := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(a.Key)}
			assert.False(t, key.Matches(msg, own...), "%s's key %q is the TUI's", l.ID, a.Key)
			assert.NotEmpty(t, a.Help, "%s's key %q has no help", l.ID, a.Key)
		}
	}
}

// A key press becomes an Act on the run's channel, and the lesson's
// answer comes back to the status line.
func TestActionKeyReachesTheLesson(t *testing.T) {
	h, run := startRun(1, fakeActs, lesson.Options{Backend: lab.InMem, Speed: 1})
	require.NotNil(t, h.act, "a lesson with actions gets a channel")
	done := make(chan tea.Msg, 1)
	go func() { done <- run() }()
	go func() {
		for range h.events { // the view's pump, reduced to draining
		}
	}()
	m := runningOn(t, fakeActs, 80, 24, h)
	m, cmd := press(m, "x")
	require.NotNil(t, cmd, "x is handed to the lesson from a command")
	assert.Contains(t, statusLine(m, 80), "x: handed to the lesson")
	msg := cmd()
	assert.Equal(t, actMsg{gen: 1, key: "x", line: "poked"}, msg)
	next, _ := m.Update(msg)
	assert.Contains(t, statusLine(next.(Model), 80), "x: poked")
	select {
	case d := <-done:
		assert.NoError(t, d.(runDoneMsg).err)
	case <-time.After(10 * time.Second):
		t.Fatal("the lesson did not end after its key")
	}

	h2, _ := startRun(2, fakeDLQ, lesson.Options{Backend: lab.InMem})
	assert.Nil(t, h2.act, "a lesson without actions gets none")
}

// A key the lesson does not read is reported after a bounded wait; a key
// while paused or after the run is not handed on.
func TestActionKeyNotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &runHandle{gen: 1, act: make(chan lesson.Act), finished: make(chan struct{})}
		msg := actCmd(h, "x")().(actMsg)
		assert.Contains(t, msg.line, "busy and did not take it")
	})
	h := &runHandle{gen: 1, act: make(chan lesson.Act), finished: make(chan struct{})}
	m := runningOn(t, fakeActs, 80, 24, h)
	m.run.paused = true
	m, cmd := press(m, "x")
	assert.Nil(t, cmd)
	assert.Contains(t, m.status.flash, "paused: space resumes, then x")
	m.run.paused, m.run.state = false, finished
	m, cmd = press(m, "x")
	assert.Nil(t, cmd)
	assert.Contains(t, m.status.flash, "x acts while the lesson runs")
}

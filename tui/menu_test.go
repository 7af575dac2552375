package tui

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/list"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
)

// The menu's filter filters: / then "breaker" then enter leaves only the
// lessons that match, in a real program at 80×24, and a second enter opens
// the first of them (not lesson 1, the first of the whole list).
func TestMenuFilterFilters(t *testing.T) {
	m, err := New(Config{})
	require.NoError(t, err)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	tm.Type("/")
	tm.Type("breaker")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	teatest.WaitFor(t, tm.Output(), func(out []byte) bool {
		return bytes.Contains(out, []byte("“breaker”"))
	}, teatest.WithDuration(10*time.Second))
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
	require.Equal(t, list.FilterApplied, final.menu.list.FilterState())
	visible := final.menu.list.VisibleItems()
	require.NotEmpty(t, visible)
	assert.Less(t, len(visible), len(lessons.All), "the filter hides lessons without the word")
	for _, it := range visible {
		assert.Contains(t, strings.ToLower(it.FilterValue()), "breaker")
	}

	// enter on the filtered list opens the lesson under the cursor.
	first := visible[0].(lessonItem).l
	next, _ := final.menuKey(tea.KeyMsg{Type: tea.KeyEnter})
	opened := next.(Model)
	opened.run.stop()
	assert.Equal(t, lessonScreen, opened.screen)
	assert.Equal(t, first.ID, opened.lesson().ID, "enter opens the filtered list's first lesson")
}

// TestMenuFilterDropsALateResult: bubbles' list matches each keystroke of a
// filter in a command and applies the results as they come. The matches
// for "bre" delivered after enter accepted "breaker" (a busy machine's
// order, seen in CI) must not replace the accepted filter's.
func TestMenuFilterDropsALateResult(t *testing.T) {
	mn := newMenu(lessons.All)
	mn, _ = mn.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/")})
	mn, cmd := mn.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("bre")})
	late := filterMatches(t, cmd)
	mn, cmd = mn.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("aker")})
	current := filterMatches(t, cmd)
	mn, _ = mn.Update(current)
	mn, _ = mn.Update(tea.KeyMsg{Type: tea.KeyEnter})
	mn, _ = mn.Update(late)

	require.Equal(t, list.FilterApplied, mn.list.FilterState())
	visible := mn.list.VisibleItems()
	require.NotEmpty(t, visible)
	for _, it := range visible {
		assert.Contains(t, strings.ToLower(it.FilterValue()), "breaker")
	}
}

// filterMatches runs cmd's commands (a batch's too) and returns the list's
// filter result among their messages. A command that does not answer at
// once (the cursor's blink timer) is left.
func filterMatches(t *testing.T, cmd tea.Cmd) list.FilterMatchesMsg {
	t.Helper()
	found := make(chan list.FilterMatchesMsg, 8)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			for _, sub := range msg {
				go run(sub)
			}
		case list.FilterMatchesMsg:
			found <- msg
		}
	}
	go run(cmd)
	select {
	case msg := <-found:
		return msg
	case <-time.After(5 * time.Second):
		t.Fatal("no filter result among the commands")
		return nil
	}
}

// Esc on the menu does not quit: Esc in a lesson comes back to the menu,
// so a second Esc would end the program. It says what q does instead.
func TestMenuEscDoesNotQuit(t *testing.T) {
	m, err := New(Config{})
	require.NoError(t, err)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEsc})
	m = next.(Model)
	assert.Equal(t, menuScreen, m.screen)
	if cmd != nil {
		got := make(chan tea.Msg, 1)
		go func() { got <- cmd() }()
		select {
		case msg := <-got:
			_, quit := msg.(tea.QuitMsg)
			assert.False(t, quit, "esc on the menu quit the program")
		case <-time.After(3 * time.Second): // a status message's timer: no quit
		}
	}
	assert.Contains(t, m.View(), "q quits")
}

// Keys that reach the program in one read ("+++", as tmux send-keys or a
// fast typist sends them) are each applied, in order.
func TestQueuedKeysAreAllApplied(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m.run.nextSpeed = 0.25
	m, _ = press(m, "+++")
	assert.Equal(t, 2.0, m.run.nextSpeed, "three steps up from 0.25×: 0.5, 1, 2")
	m, _ = press(m, "--")
	assert.Equal(t, 0.5, m.run.nextSpeed, "two steps down")

	menu, err := New(Config{Lessons: []lesson.Lesson{fakeDLQ, stressLesson(3)}})
	require.NoError(t, err)
	menu = step1(menu, tea.WindowSizeMsg{Width: 80, Height: 24})
	menu, _ = press(menu, "jk")
	assert.Equal(t, 0, menu.menu.list.Index(), "down then up")
	menu, _ = press(menu, "jj")
	assert.Equal(t, 1, menu.menu.list.Index(), "down twice, on a list of two")
}

// failingStart is a lesson whose run fails before its first event, with a
// message longer than a line at 80 columns.
var failingStart = lesson.Lesson{
	ID: "Q96", Title: "Fails at start", Notice: "It never starts.",
	InMem: func(context.Context, *lesson.Env) error {
		return errors.New("the queue qlab-0a1b2c.sequential.queue exists with other arguments " +
			"(x-message-ttl 5000 against 1000): reset it with rabbitmqctl delete_queue " +
			"qlab-0a1b2c.sequential.queue, then run the lesson again")
	},
}

// A run that fails at start shows its whole message, wrapped at 80
// columns, and no "(waiting for the first event…)".
func TestFailedStartShowsWholeMessage(t *testing.T) {
	m, err := New(Config{Lessons: []lesson.Lesson{failingStart}, Start: 96})
	require.NoError(t, err)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m, _ = drive(t, m, func(m Model) bool { return m.run.state == failed })
	view := m.View()
	assert.NotContains(t, view, "waiting for the first event")
	flat := strings.Join(strings.Fields(view), " ")
	for _, word := range strings.Fields(failingStart.InMem(context.Background(), nil).Error()) {
		assert.Contains(t, flat, word)
	}
	assert.Contains(t, flat, "run the lesson again", "the message's end is on the screen")
	for i, line := range strings.Split(view, "\n") {
		assert.LessOrEqual(t, len([]rune(line)), 80, "line %d", i+1)
	}
}

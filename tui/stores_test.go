package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/store"
)

// TestStorePanelShowsTheStoresCounts runs Q18 in memory through the model
// as bubbletea would, at 80×24: while it runs the panel shows the store
// of the part under way, and at the end every store's final counts, which
// are the lesson's own figures: part (b)'s seed order leaves one row
// QUEUED and three SENT (its table's "stuck QUEUED 1", "SENT 3"); every
// frame still fills the screen exactly.
func TestStorePanelShowsTheStoresCounts(t *testing.T) {
	t.Parallel() // Q18 runs on the wall clock (600×): beside the other runs
	l, err := lessons.Parse("18")
	require.NoError(t, err)
	m, err := New(Config{Lessons: []lesson.Lesson{l}, Start: 18, Backend: lab.InMem})
	require.NoError(t, err)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	var during []string
	final, _ := drive(t, m, func(m Model) bool {
		if m.panels.storeRows() > 0 && m.run.state == running {
			during = append(during, m.panels.storePanel(80)...)
			checkFrame(t, m, 80, 24)
		}
		return m.run.runDone && m.scene.closed && m.panels.final
	})
	assert.True(t, allClosed(final.panels.states), "%+v", final.panels.states)
	open := 0
	for _, line := range during {
		if !strings.Contains(line, " ended · ") {
			open++
		}
	}
	assert.NotZero(t, open, "the panel showed a store of a part under way:\n%s", strings.Join(during, "\n"))

	byName := map[string]lesson.StoreState{}
	for _, s := range final.panels.states {
		byName[s.Name] = s
	}
	seed := byName["queued_first"]
	assert.Equal(t, 1, seed.Counts[store.Queued], "%+v", final.panels.states)
	assert.Equal(t, 3, seed.Counts[store.Sent])
	shown := strings.Join(final.panels.storePanel(80), "\n")
	assert.Contains(t, shown, "store check_then_act ended · a map · SENT 5")
	checkFrame(t, final, 80, 24)
}

// TestStorePanelOnlyForStoreLessons: a lesson without a status store
// (Q07) never shows the panel, so its layout is what it was.
func TestStorePanelOnlyForStoreLessons(t *testing.T) {
	l, err := lessons.Parse("7")
	require.NoError(t, err)
	m, err := New(Config{Lessons: []lesson.Lesson{l}, Start: 7, Speed: 50})
	require.NoError(t, err)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	final, _ := drive(t, m, func(m Model) bool { return m.run.runDone && m.scene.closed })
	assert.Zero(t, final.panels.storeRows())
	assert.NotContains(t, final.View(), "store ")
}

func allClosed(states []lesson.StoreState) bool {
	for _, s := range states {
		if !s.Closed {
			return false
		}
	}
	return len(states) > 0
}

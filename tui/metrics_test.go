package tui

import (
	"strconv"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/metrics"
)

// TestMetricsPanelTogglesAndFits replays Q07's run into a model and its
// run's metrics at 80×24 and 160×48: m opens a two-line panel whose counts
// are the run's own (acks = succeeded events, nacks = failed, one consume
// duration per attempt); every frame still fills the screen exactly with
// the log following; m again closes it; the results pane keeps it.
func TestMetricsPanelTogglesAndFits(t *testing.T) {
	l, err := lessons.Parse("7")
	require.NoError(t, err)
	events, _ := lessontest.RunInMem(t, l, lesson.Options{})
	kinds := map[lab.Kind]int{}
	for _, e := range events {
		kinds[e.Kind]++
	}
	require.NotZero(t, kinds[lab.Failed])
	for _, size := range sizes {
		w, h := size[0], size[1]
		m := testModel(l, w, h)
		m.panels.met = metrics.New()
		closed := m.View()
		m = step1(m, keyMsg("m"))
		require.True(t, m.panels.on)
		for i, e := range events {
			m.panels.met.Emit(e)
			m = feed(m, e)
			if i%5 == 0 || i == len(events)-1 {
				checkFrame(t, m, w, h)
			}
		}
		frame := m.View()
		want := []string{"metrics · ack " + strconv.Itoa(kinds[lab.Succeeded]) + " · nack " + strconv.Itoa(kinds[lab.Failed]),
			"consume n=" + strconv.Itoa(kinds[lab.Succeeded]+kinds[lab.Failed])}
		for _, s := range want {
			assert.Contains(t, frame, s, "%dx%d:\n%s", w, h, frame)
		}
		assert.Equal(t, w >= 100, strings.Contains(frame, "m metrics"), "the help names m where it fits")

		m = step1(m, keyMsg("m"))
		assert.NotContains(t, m.View(), "metrics · ack")
		assert.Equal(t, len(strings.Split(closed, "\n")), len(strings.Split(m.View(), "\n")))
		m = step1(m, keyMsg("m"))
		m.run.state = finished
		m.showPane(resultsPane)
		checkFrame(t, m, w, h)
		assert.Contains(t, m.View(), "metrics · ack")
	}
}

// TestMetricsPanelShowsWhereToScrape: with qlab tui --metrics the panel
// names the URL, whole at 160 and at 80 columns.
func TestMetricsPanelShowsWhereToScrape(t *testing.T) {
	l, err := lessons.Parse("1")
	require.NoError(t, err)
	m, err := New(Config{Lessons: []lesson.Lesson{l}, Start: 1, MetricsURL: "http://127.0.0.1:9100/metrics"})
	require.NoError(t, err)
	m.run.state = running
	m = step1(step1(m, tea.WindowSizeMsg{Width: 160, Height: 48}), keyMsg("m"))
	assert.Contains(t, m.View(), "http://127.0.0.1:9100/metrics")
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	checkFrame(t, m, 80, 24)
	assert.Contains(t, m.View(), "http://127.0.0.1:9100/metrics", "whole at 80 columns too")
}

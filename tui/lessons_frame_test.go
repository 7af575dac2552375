package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/render"
)

// sizes are the terminals every lesson is drawn at: the classic 80×24
// and a large one.
var sizes = [][2]int{{80, 24}, {160, 48}}

// TestEveryLessonFitsAndTheLogFollows draws every lesson, on every
// backend it has (the broker's when one answers), at 80×24 and 160×48,
// event batch by event batch as a run delivers them. Every frame fills
// the screen exactly, no line is wider than the terminal (counted both
// as a grapheme-aware renderer and as a per-character terminal such as
// tmux counts, so an emoji with a variation selector cannot shift a line),
// and the log pane shows the newest log line: it keeps following when a
// second row of boxes, a part banner or the breaker line takes rows from
// it. At the end, the results pane cuts no column.
//
// Under -short (make quick: one broker pass) only shortBrokerLesson is
// drawn from a broker run; every lesson still is from its in-memory one.
func TestEveryLessonFitsAndTheLogFollows(t *testing.T) {
	t.Parallel() // the package's longest: its runs go beside the other tests, not before them
	for _, l := range lessons.All {
		for _, b := range l.Backends() {
			t.Run(l.ID+"/"+string(b), func(t *testing.T) {
				if b == lab.Rabbit && testing.Short() && l.ID != shortBrokerLesson {
					t.Skipf("make quick draws only %s from a broker run", shortBrokerLesson)
				}
				t.Parallel()
				events, res := lessontest.On(t, b, l, lesson.Options{Brief: true}) // frames, not figures
				for _, size := range sizes {
					t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
						replay(t, l, b, events, res, size[0], size[1])
					})
				}
			})
		}
	}
}

// shortBrokerLesson is the one lesson whose broker run the frames are
// checked on under -short: a short run whose log has the broker's own
// lines (consumers, redeliveries) beside the lesson's.
const shortBrokerLesson = "Q10"

// replay feeds a lesson's events to a model of size w×h in the batches a
// run's frames would bring (events of one lesson instant), checking
// every frame, then ends the run and checks the results.
func replay(t *testing.T, l lesson.Lesson, b lab.Backend, events []lab.Event, res lesson.Result, w, h int) {
	m := testModel(l, w, h)
	m.run.backend = b
	for i := 0; i < len(events); {
		j := i + 1
		for j < len(events) && events[j].TMs == events[i].TMs && j-i < 8 {
			j++
		}
		m = frames(feed(m, events[i:j]...), 1)
		if !checkFrame(t, m, w, h) {
			return
		}
		i = j
	}
	m = step1(m, eventsMsg{gen: m.run.gen, closed: true})
	m = step1(m, runDoneMsg{gen: m.run.gen, tables: res.Tables})
	require.Equal(t, resultsPane, m.log.pane)
	for _, line := range strings.Split(m.log.page, "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(line), w, "the results pane would cut this line:\n%s", line)
	}
	checkFrame(t, m, w, h)
}

// checkFrame asserts m's frame fills w×h, fits w, and shows the newest
// log line at the bottom of the log pane.
func checkFrame(t *testing.T, m Model, w, h int) bool {
	t.Helper()
	frame := m.View()
	lines := strings.Split(frame, "\n")
	ok := assert.Len(t, lines, h, "the frame fills the screen exactly:\n%s", frame)
	for _, line := range lines {
		ok = assert.LessOrEqual(t, ansi.StringWidth(line), w, "too wide:\n%s", line) && ok
		ok = assert.Equal(t, ansi.StringWidth(line), runewidth.StringWidth(ansi.Strip(line)),
			"a terminal that counts characters would draw this line another width:\n%s", line) && ok
	}
	for _, line := range lines { // the tally keeps the clock, however many fates it counts
		if strings.HasPrefix(line, "done ") {
			ok = assert.Contains(t, line, render.Stamp(m.scene.clock), "the tally cut the clock:\n%s", line) && ok
		}
	}
	if m.log.pane != logPane || len(m.log.lines) == 0 {
		return ok
	}
	logged := strings.Split(strings.Join(m.log.lines, "\n"), "\n")
	newest := strings.TrimRight(ansi.Truncate(sanitize(logged[len(logged)-1]), w, ""), " ")
	shown := ""
	for i := len(lines) - 2; i >= 0 && !strings.HasPrefix(lines[i], "── "); i-- {
		if strings.TrimSpace(lines[i]) != "" {
			shown = strings.TrimRight(lines[i], " ")
			break
		}
	}
	return assert.Equal(t, newest, shown, "the log stopped following its newest line:\n%s", frame) && ok
}

// TestNoticeReadsInFull: at 80×24 the notice takes three lines and says
// how to read the rest; i shows all of it in the pane, scrollable, and i
// again brings the log back.
func TestNoticeReadsInFull(t *testing.T) {
	l, err := lessons.Parse("15") // the longest notice
	require.NoError(t, err)
	m := testModel(l, 80, 24)
	m = feed(m, ev(0, lab.Enqueued, "dA", "email-queue", ""))
	frame := m.View()
	assert.Contains(t, frame, "(i: read all)")
	m = step1(m, keyMsg("i"))
	require.Equal(t, noticePane, m.log.pane)
	var read []string
	for range 20 { // scroll down through it
		read = append(read, strings.Split(m.View(), "\n")...)
		m = step1(m, keyMsg("down"))
	}
	flat := strings.Join(strings.Fields(strings.Join(read, "\n")), " ")
	for _, word := range strings.Fields(l.NoticeFor(m.run.backend)) {
		assert.Contains(t, flat, word)
	}
	assert.Contains(t, flat, strings.Join(strings.Fields(l.NoticeFor(m.run.backend))[len(strings.Fields(l.NoticeFor(m.run.backend)))-8:], " "), "its last words too")
	checkFrame(t, m, 80, 24)
	m = step1(m, keyMsg("i"))
	assert.Equal(t, logPane, m.log.pane)
	assert.Contains(t, m.View(), "Enqueued task dA")
}

// keyMsg is the key press s: a rune, or "down".
func keyMsg(s string) tea.KeyMsg {
	if s == "down" {
		return tea.KeyMsg{Type: tea.KeyDown}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// TestResizeWrapsTheLogAgain: log lines wrap to the width they are drawn
// at, and a narrower terminal draws them again rather than cutting them.
func TestResizeWrapsTheLogAgain(t *testing.T) {
	m := testModel(fakeDLQ, 160, 48)
	long := ev(300, lab.Failed, "C", "main", "")
	long.Note = strings.Repeat("a reason ", 7) + "to its very end" // one line at 160 columns, two at 80
	m = feed(m, long)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	checkFrame(t, m, 80, 24)
	assert.Contains(t, m.View(), "to its very end", "the whole note, wrapped, not cut")
}

package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
)

// statusBar is the two lines that say how the run stands: the header (the
// lesson, the run's backend, speed and state) and the line under the
// notice, which says what the run's state asks of the user or else
// shows a passing message (flash): a note of the backend's, the lesson's
// answer to one of its keys, a hint at a key that does nothing now.
// Update takes the lesson's answers (actMsg); the model sets flash for
// the rest. View draws the line under the notice, header the header,
// both from the run as it stands; neither wraps: a long message is cut
// at a word.
type statusBar struct {
	st    styles
	flash string // the passing message; "" shows nothing (or the run's end)
}

// Update takes the answer to one of the lesson's own keys (the model
// hands it only the current run's).
func (s statusBar) Update(msg tea.Msg) statusBar {
	if msg, ok := msg.(actMsg); ok && !msg.fault {
		s.flash = msg.key + ": " + msg.line
	}
	return s
}

// View is the status line at width w for run r of lesson l; next is where
// to go after it (nextStep).
func (s statusBar) View(r session, l lesson.Lesson, next string, w int) string {
	switch {
	case r.state == failed, r.state == noBroker:
		return s.st.paint(bad, r.why(l, next, w)[0])
	case r.paused && r.backend == lab.Rabbit:
		return s.st.paint(warn, clip("paused: RabbitMQ's TTLs keep running, so a wait may read short (space resumes)", w))
	case r.paused:
		return s.st.paint(warn, clip("paused: lesson time stands still, timers too (space resumes)", w))
	case s.flash != "":
		return s.st.paint(warn, clipWords(s.flash, w))
	case r.state == finished && r.missed > 0:
		return s.st.paint(warn, clip(fmt.Sprintf("finished · the view fell behind and missed %d events · r replays, - slows it", r.missed), w))
	case r.state == finished:
		return s.st.paint(good, clip("finished · "+next+" · r replays · t the log", w))
	}
	return ""
}

// header is the title line: lesson l, and run r's backend, speed and state.
func (s statusBar) header(r session, l lesson.Lesson, width int) string {
	state := map[runState]string{
		seeking: "… finding a broker", noBroker: "✗ no broker", running: "▶ running",
		finished: "■ finished", failed: "✗ failed",
	}[r.state]
	if r.paused {
		state = "❚❚ paused"
	}
	speed := "speed " + speedText(r.speed)
	if r.nextSpeed != r.speed {
		speed += " (next run " + speedText(r.nextSpeed) + ")"
	}
	right := fmt.Sprintf("%s · %s · %s", r.backend, speed, state)
	left := clip(l.ID+" · "+l.Title, max(width-len([]rune(right))-2, 8))
	gap := max(width-len([]rune(left))-len([]rune(right)), 1)
	return s.st.titled(left) + strings.Repeat(" ", gap) + s.st.paint(faint, right)
}

// nextStep is the "Next:" pointer after lesson cur of ls: the lesson after
// it, or, after the last, where to go from there.
func nextStep(ls []lesson.Lesson, cur int) string {
	if cur+1 < len(ls) {
		return fmt.Sprintf("Next: qlab tui %d (n)", ls[cur+1].Number())
	}
	return "that was the last lesson · Next: qlab compare 10 (both backends side by side), or esc for the menu"
}

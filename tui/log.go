package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// logKeep is how many log lines the log pane keeps; older ones scroll away
// so a 10,000-task run costs the same per frame as a small one.
const logKeep = 500

// pane is what the pane under the stage shows.
type pane int

const (
	logPane     pane = iota // the log lines, as qlab run prints them
	resultsPane             // the closing tables: what happened, and the lesson's measurements
	noticePane              // what to notice, in full (the view's lines hold only the start)
)

// logView is the pane under the stage, a scrolling viewport that shows
// one of three pages: the run's log (its last logKeep lines, as qlab run
// prints them, wrapped to the width), the results or the notice. The
// model hands it the events (add), the backend's notes (note) and the
// text of the other two pages (fill); Update scrolls. The log follows its
// tail unless the user scrolled up, however the rows above it change;
// the other pages stay where the user scrolled them. View draws the
// pane's rule, then the page.
type logView struct {
	vp    viewport.Model
	st    styles
	color bool

	pane   pane
	page   string      // the results or the notice, as last filled
	logged []lab.Event // the last logKeep events that have a log line
	lines  []string    // their lines, wrapped to the width they were drawn at
	width  int         // that width: a resize draws them again
}

func newLogView(st styles, color bool) logView {
	return logView{vp: viewport.New(80, 10), st: st, color: color}
}

// Update scrolls the pane (keys, the mouse wheel).
func (l logView) Update(msg tea.Msg) (logView, tea.Cmd) {
	var cmd tea.Cmd
	l.vp, cmd = l.vp.Update(msg)
	return l, cmd
}

// View is the pane's rule, then the page, at the width it was fitted to.
func (l logView) View() string {
	w := l.vp.Width
	head := "── log · " + legend + " "
	switch l.pane {
	case resultsPane:
		head = "── results (t: the log · ↑/↓ scroll) "
	case noticePane:
		head = "── what to notice (i: the log · ↑/↓ scroll) "
	}
	head = clip(head, w)
	return l.st.paint(faint, head+strings.Repeat("─", max(w-len([]rune(head)), 0))) + "\n" + l.vp.View()
}

// reset empties the log for a new run, and shows it.
func (l *logView) reset() {
	l.logged, l.lines, l.pane, l.page = nil, nil, logPane, ""
	l.vp.SetContent("")
}

// add logs the events that have a log line at width w, keeping the last
// logKeep. It does not redraw: fill does.
func (l *logView) add(evs []lab.Event, w int) {
	l.width = w
	for _, e := range evs {
		if line := l.line(e, w); line != "" {
			l.logged = append(l.logged, e)
			l.lines = append(l.lines, line)
		}
	}
	if over := len(l.lines) - logKeep; over > 0 {
		l.logged = append(l.logged[:0:0], l.logged[over:]...)
		l.lines = append(l.lines[:0:0], l.lines[over:]...)
	}
}

// noteKind marks a logged line that is no event but a note of the
// backend's (note).
const noteKind lab.Kind = ""

// note logs a line the run's backend logged (a connection lost, a
// reconnect, Q21's node stopped), at lesson time ms, whole at width w.
func (l *logView) note(line string, ms int64, w int) {
	e := lab.Event{Kind: noteKind, Note: line, TMs: ms}
	l.logged = append(l.logged, e)
	l.lines = append(l.lines, l.line(e, w))
}

// line is e's log line as qlab run prints it, wrapped to width w rather
// than cut; "" for an event without one.
func (l logView) line(e lab.Event, w int) string {
	if e.Kind == noteKind {
		lines := render.Wrap("⚡ "+e.Note, w, "   ")
		for i := range lines {
			lines[i] = l.st.paint(warn, lines[i])
		}
		return sanitize(strings.Join(lines, "\n"))
	}
	return sanitize(render.Style{Color: l.color, Width: w}.Line(e))
}

// resize draws the log's lines again at width w, if they were drawn at
// another.
func (l *logView) resize(w int) {
	if l.width == w || len(l.logged) == 0 {
		return
	}
	l.width = w
	for i, e := range l.logged {
		l.lines[i] = l.line(e, w)
	}
}

// fit sizes the pane to w×h, keeping the log at its tail if it was there.
func (l *logView) fit(w, h int) {
	bottom := l.vp.AtBottom()
	l.vp.Width, l.vp.Height = w, max(h, 1)
	if bottom && l.pane == logPane {
		l.vp.GotoBottom()
	}
}

// fill sizes the pane to w×h and puts its page in it: the log, or page
// (the results or the notice).
func (l *logView) fill(page string, w, h int) {
	follow := l.vp.AtBottom() || l.vp.TotalLineCount() == 0
	l.fit(w, h)
	if l.pane != logPane {
		l.page = page
		l.vp.SetContent(page)
		return
	}
	l.vp.SetContent(strings.Join(l.lines, "\n"))
	if follow {
		l.vp.GotoBottom()
	}
}

// top puts a page at its top, the log at its tail.
func (l *logView) top() {
	if l.pane != logPane {
		l.vp.GotoTop()
	} else {
		l.vp.GotoBottom()
	}
}

// sanitize drops the emoji variation selector (U+FE0F) from a line the
// TUI draws: it makes ♻ or 🗑 two columns wide for a renderer that reads
// graphemes but one for a terminal that counts characters (tmux), and the
// two would disagree on where the line ends.
func sanitize(s string) string { return strings.ReplaceAll(s, "\uFE0F", "") }

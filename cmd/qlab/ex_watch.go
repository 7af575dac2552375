package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/queuelab/qlab/exercises"
)

// Watch mode: the student's file is polled (content hash, so a save that
// keeps the mtime still counts, on any file system, with no dependency);
// a change that stays quiet for exDebounce starts a check. Changes during
// a check are ignored, as rustlings does: they are the check's own or a
// formatter's. With --manual nothing is polled and c checks.
const (
	exPoll     = 100 * time.Millisecond
	exDebounce = 200 * time.Millisecond
)

// exMode names what the screen shows.
type exMode int

const (
	exShowResult exMode = iota
	exShowList
	exConfirmReset
)

type exModel struct {
	ctx    context.Context
	root   string
	manual bool
	paint  exPaint

	st      exState
	ex      exercises.Exercise
	mode    exMode
	running bool
	last    *exRun // the latest finished check of ex
	hints   int    // hints of ex shown so far
	note    string // one line about the last key
	cursor  int    // the list's selected row (0-based)
	typed   string // the digits typed in the list so far: "1" then "7" is 17

	seen      [32]byte  // the student's file as last polled
	changedAt time.Time // when it last changed; zero once checked
	width     int
	height    int
}

// Messages.
type (
	exPolled struct {
		sum [32]byte
		at  time.Time
	}
	exChecked  struct{ run exRun }
	exWasReset struct{ err error }
	exSaved    struct {
		st  exState
		err error
	}
)

// exWatch runs watch mode on open, or on the current exercise when open
// is zero.
func exWatch(ctx context.Context, root string, open exercises.Exercise, manual, color bool) error {
	st, err := updateExState(root, func(st *exState) {
		if open.Dir != "" {
			st.Current = open.Dir
		}
	})
	if err != nil {
		return err
	}
	ex, _ := exByDir(st.Current)
	m := exModel{ctx: ctx, root: root, manual: manual, paint: exPaint(color), st: st, ex: ex, width: 80, height: 24}
	m.seen = exSum(m.file())
	m.running = true
	_, err = tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx)).Run()
	if err != nil && ctx.Err() != nil {
		return nil // interrupted: a normal way out
	}
	return err
}

func (m exModel) file() string { return filepath.Join(m.root, m.ex.Path()) }

func (m exModel) Init() tea.Cmd { return tea.Batch(m.check(), m.poll()) }

// check runs the exercise's checker (go test) off the UI goroutine.
func (m exModel) check() tea.Cmd {
	ctx, root, ex := m.ctx, m.root, m.ex
	return func() tea.Msg {
		r := runExercise(ctx, root, ex)
		reportExercise(ctx, r, io.Discard) // a line on stderr would tear the screen
		return exChecked{r}
	}
}

// poll reads the student's file after exPoll.
func (m exModel) poll() tea.Cmd {
	if m.manual {
		return nil
	}
	file := m.file()
	return tea.Tick(exPoll, func(at time.Time) tea.Msg { return exPolled{exSum(file), at} })
}

func exSum(file string) [32]byte {
	b, _ := os.ReadFile(file) // a file mid-save or gone reads as changed; the next poll settles it
	return sha256.Sum256(b)
}

// save applies change to the progress file as it is on disk (another
// terminal may have written it since) and hands the merged state back.
func (m exModel) save(change func(*exState)) tea.Cmd {
	root := m.root
	return func() tea.Msg {
		st, err := updateExState(root, change)
		return exSaved{st, err}
	}
}

func (m exModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case exPolled:
		return m.polled(msg)
	case exChecked:
		m.running, m.last = false, &msg.run
		m.seen, m.changedAt = exSum(m.file()), time.Time{} // edits made during the check are ignored
		m.st.record(msg.run)
		m.st.Current = m.ex.Dir
		run, dir := msg.run, m.ex.Dir
		return m, m.save(func(st *exState) { st.record(run); st.Current = dir })
	case exSaved:
		if msg.err != nil {
			m.note = "progress not saved: " + msg.err.Error()
			return m, nil
		}
		m.st = msg.st
	case exWasReset:
		m.mode, m.note = exShowResult, "reset: the file is back as shipped"
		if msg.err != nil {
			m.note = "reset failed: " + msg.err.Error()
		}
		return m.start()
	case tea.KeyMsg:
		return m.key(msg.String())
	}
	return m, nil
}

func (m exModel) polled(p exPolled) (tea.Model, tea.Cmd) {
	switch {
	case m.running:
		m.seen = p.sum
	case p.sum != m.seen:
		m.seen, m.changedAt = p.sum, p.at
	case !m.changedAt.IsZero() && p.at.Sub(m.changedAt) >= exDebounce:
		m2, cmd := m.start()
		return m2, tea.Batch(cmd, m.poll())
	}
	return m, m.poll()
}

// start begins a check of the current exercise.
func (m exModel) start() (tea.Model, tea.Cmd) {
	if m.running {
		return m, nil
	}
	m.running, m.changedAt = true, time.Time{}
	return m, m.check()
}

func (m exModel) key(k string) (tea.Model, tea.Cmd) {
	if m.mode == exConfirmReset {
		m.mode = exShowResult
		if k == "y" {
			file, stub := m.file(), m.ex.Stub()
			return m, func() tea.Msg { return exWasReset{os.WriteFile(file, stub, 0o644)} }
		}
		m.note = "reset cancelled"
		return m, nil
	}
	m.note = ""
	if m.mode == exShowList {
		if m2, cmd, ok := m.listKey(k); ok {
			return m2, cmd
		}
	}
	switch k {
	case "q", "ctrl+c", "esc":
		if k == "esc" && m.mode == exShowList {
			m.mode = exShowResult
			return m, nil
		}
		return m, tea.Quit
	case "n":
		return m.next()
	case "h":
		m.hints = max(m.hints, 1) + 1
		m.mode = exShowResult
	case "l":
		m.mode = map[exMode]exMode{exShowResult: exShowList, exShowList: exShowResult}[m.mode]
		m.cursor, m.typed = max(exercises.Index(m.ex), 0), ""
	case "r":
		m.mode = exConfirmReset
	case "c", "enter":
		m.mode = exShowResult
		return m.start()
	}
	return m, nil
}

// next moves on once the current exercise passes.
func (m exModel) next() (tea.Model, tea.Cmd) {
	if m.running || m.last == nil || m.last.Status != exPass && m.last.Status != exSkip {
		m.note = "pass this exercise first (h for a hint, l to pick another)"
		return m, nil
	}
	ex, ok := m.st.next()
	if !ok {
		m.note = "every exercise is done: well done! (q quits)"
		return m, nil
	}
	return m.open(ex)
}

// open makes ex the current exercise and checks it.
func (m exModel) open(ex exercises.Exercise) (tea.Model, tea.Cmd) {
	if m.running {
		m.note = "a check is running: pick again when it is done"
		return m, nil
	}
	m.ex, m.last, m.hints, m.mode = ex, nil, 0, exShowResult
	m.st.Current = ex.Dir
	m.seen = exSum(m.file())
	m2, cmd := m.start()
	dir := ex.Dir
	return m2, tea.Batch(cmd, m.save(func(st *exState) { st.Current = dir }))
}

// listKey moves the list's cursor (↑/↓, k/j) or opens the exercise under
// it (enter). Digits move it to the exercise whose number they spell: a
// digit extends the number typed before it when that makes one ("1" then
// "7" is 17), else it starts a new one ("2" then "5" is 5, there being no
// 25). Any other key starts the number afresh.
func (m exModel) listKey(k string) (tea.Model, tea.Cmd, bool) {
	n := len(exercises.All)
	typed := m.typed
	m.typed = ""
	switch k {
	case "up", "k":
		m.cursor = (m.cursor + n - 1) % n
	case "down", "j":
		m.cursor = (m.cursor + 1) % n
	case "enter", " ":
		m2, cmd := m.open(exercises.All[m.cursor])
		return m2, cmd, true
	default:
		for _, number := range []string{typed + k, k} {
			if d, err := strconv.Atoi(number); err == nil {
				if ex, err := exercises.Find(d); err == nil {
					m.cursor, m.typed = exercises.Index(ex), number
					return m, nil, true
				}
			}
		}
		return m, nil, false
	}
	return m, nil, true
}

func (m exModel) View() string {
	p := m.paint
	var top []string
	top = append(top, p.bold(exHeading(m.ex)))
	top = append(top, fmt.Sprintf("edit %s   %s", m.ex.Path(), p.faint(fmt.Sprintf("%d/%d done", len(m.st.Done), len(exercises.All)))))
	top = append(top, "")
	var body []string
	switch {
	case m.mode == exShowList:
		body = m.listLines() // scrolled to the cursor below, once the room is known
	case m.running && m.last == nil:
		body = []string{"checking…"}
	case m.last != nil:
		body = strings.Split(strings.TrimRight(exReport(*m.last, p), "\n"), "\n")
		if m.running {
			body = append([]string{p.faint("checking again…")}, body...)
		}
	}
	var foot []string
	if failing := m.last != nil && m.last.Status != exPass && m.last.Status != exSkip; failing && m.mode == exShowResult {
		text, n := exHint(*m.last, max(m.hints, 1)) // the first hint comes with the failure; h shows the next
		if n > 0 {
			foot = append(foot, "", wrap(fmt.Sprintf("Hint %d/%d: %s", min(max(m.hints, 1), n), n, text), m.width))
		}
	}
	if m.mode == exConfirmReset { // the question in full, never cut at the edge
		foot = append(foot, "", p.bold(wrap("Reset "+m.ex.Path()+" to the shipped stub? Your edits are lost.", m.width)))
	}
	if m.note != "" {
		foot = append(foot, "", wrap(m.note, m.width))
	}
	foot = append(foot, "", p.faint(m.keysLine()))
	room := max(m.height-len(top)-strings.Count(strings.Join(foot, "\n"), "\n")-1, 3)
	if m.mode == exShowList {
		body = scrolled(body, m.cursor, room, p.faint)
	}
	if len(body) > room {
		body = append(body[:room-1], p.faint("…"))
	}
	for i, l := range body {
		body[i] = clip(l, m.width)
	}
	for i, l := range top {
		top[i] = clip(l, m.width)
	}
	return strings.Join(append(append(top, body...), foot...), "\n")
}

func (m exModel) keysLine() string {
	switch {
	case m.mode == exConfirmReset:
		return "y reset · any other key cancels"
	case m.mode == exShowList:
		return "↑/↓ or a number choose · enter open · l or esc back · q quit"
	case m.last != nil && m.last.Status == exPass:
		return "n next · l list · q quit"
	case m.manual:
		return "c check · h hint · l list · r reset · q quit"
	}
	return "save to check · h next hint · l list · r reset · q quit\nno re-check when you save? press c (or run qlab ex --manual)"
}

func (m exModel) listLines() []string {
	var out []string
	for i, ex := range exercises.All {
		mark := "  "
		if m.st.done(ex.Dir) {
			mark = m.paint.good("✓ ")
		}
		if ex.Dir == m.ex.Dir {
			mark = "▶ "
		}
		line := fmt.Sprintf("%s%2d %s %s", mark, ex.Number(), ex.Lesson, ex.Title)
		if i == m.cursor {
			line = "›" + line
			if m.paint {
				line = "\x1b[7m" + line + "\x1b[0m"
			}
		} else {
			line = " " + line
		}
		out = append(out, line)
	}
	return out
}

// scrolled is the rows of a list that fit in room lines (room >= 3),
// scrolled so that row cursor is one of them: a faint line says how many
// rows are cut off above or below, so the list never just ends.
func scrolled(rows []string, cursor, room int, faint func(string) string) []string {
	n := len(rows)
	if n <= room {
		return rows
	}
	above := func(k int) string { return faint(fmt.Sprintf("  ↑ %d more", k)) }
	below := func(k int) string { return faint(fmt.Sprintf("  ↓ %d more", k)) }
	switch fit := room - 1; {
	case cursor < fit: // the top of the list
		return append(slices.Clone(rows[:fit]), below(n-fit))
	case cursor >= n-fit: // its bottom
		return append([]string{above(n - fit)}, rows[n-fit:]...)
	}
	fit := room - 2
	start := cursor - fit/2 // the cursor near the middle; start >= 1 and start+fit < n here
	out := append([]string{above(start)}, rows[start:start+fit]...)
	return append(out, below(n-start-fit))
}

// clip cuts a line to width runes (escape codes of a coloured line may
// cut a little early; never late).
func clip(s string, width int) string {
	r := []rune(s)
	if width <= 0 || len(r) <= width {
		return s
	}
	return string(r[:width-1]) + "…"
}

// wrap breaks text into lines of at most width runes at spaces.
func wrap(text string, width int) string {
	if width < 20 {
		return text
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

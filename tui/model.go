package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/list"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/metrics"
	"github.com/queuelab/qlab/render"
)

// speeds are the steps + and - walk through.
var speeds = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 50}

// logKeep is how many log lines the log pane keeps; older ones scroll away
// so a 10,000-task run costs the same per frame as a small one.
const logKeep = 500

// Config sets up the TUI.
type Config struct {
	// Lessons is the menu, in order. Empty means lessons.All.
	Lessons []lesson.Lesson
	// Start is the number of the lesson to open at once; 0 shows the menu.
	Start int
	// Backend is the backend the user named (qlab tui --backend). Empty
	// means each lesson's default (Lesson.DefaultBackend); when that is
	// RabbitMQ and no broker answers, a lesson with an in-memory twin runs
	// there and the view says why. A named backend is never replaced:
	// without a broker the view shows the no-broker state.
	Backend lab.Backend
	// Speed is lesson time per real time for every lesson; 0 means each
	// lesson's own (lessonSpeed).
	Speed float64
	// Plan is the workload; nil means lab.DefaultPlan().
	Plan *lab.Plan
	// Color turns ANSI colour on; callers leave it off for NO_COLOR.
	Color bool
	// Broker finds a RabbitMQ broker and returns its URL; nil means the
	// RabbitMQ backend is unavailable. Called in a command, never in Update.
	Broker func(ctx context.Context) (url string, err error)
	// Topology optionally gives a lesson's boxes up front, in order. Nil
	// (or an empty answer) means the boxes are found from the events: every
	// queue and destination, in order of first appearance.
	Topology func(l lesson.Lesson) []Node
	// Metrics, when set, is fed every run's events (qlab tui --metrics
	// serves it, at MetricsURL).
	Metrics    *metrics.Metrics
	MetricsURL string
}

type screen int

const (
	menuScreen screen = iota
	lessonScreen
)

// runState is where the open lesson's run stands.
type runState int

const (
	idle     runState = iota // no run yet (the menu, or about to start)
	seeking                  // looking for a broker before the run can start
	noBroker                 // the run needs RabbitMQ and none answered
	running                  // events are arriving (paused or not)
	finished                 // lesson.Run returned and every event is drawn
	failed                   // lesson.Run returned an error
)

// pane is what the pane under the stage shows.
type pane int

const (
	logPane     pane = iota // the log lines, as qlab run prints them
	resultsPane             // the closing tables: what happened, and the lesson's measurements
	noticePane              // what to notice, in full (the view's lines hold only the start)
)

// Model is the bubbletea model of the whole TUI: the lesson menu and the
// lesson view. View is a pure function of it; everything that touches the
// world happens in commands.
type Model struct {
	cfg     Config
	lessons []lesson.Lesson
	screen  screen
	menu    list.Model
	log     viewport.Model
	help    help.Model
	keys    keyMap
	st      styles
	width   int
	height  int
	// quitting: a quit key was taken; keys that came with it are dropped.
	quitting bool

	cur       int         // index of the open lesson
	chosen    lab.Backend // the backend the user named (flag or b); "" means each lesson's default
	backend   lab.Backend // of the current run
	broker    string
	speed     float64 // of the current run
	nextSpeed float64 // applied at the next (re)start

	state     runState
	run       *runHandle
	gen       int
	sc        *scene
	frame     int
	clockMs   int64     // lesson time the view shows
	lastAt    time.Time // when the previous frame ticked; zero while idle
	pumping   bool      // a wait or frame command of this run is outstanding
	closed    bool      // the run's channel is drained
	runDone   bool      // lesson.Run returned
	runErr    error
	missed    int         // events the view missed by falling behind (lab.Bounded)
	paused    bool        // the user paused the running lesson
	held      []lab.Event // events that arrived while paused
	brokerErr string      // why no broker answered (noBroker)

	logged    []lab.Event    // the last logKeep events that have a log line
	logLines  []string       // their lines, wrapped to the width they were drawn at
	logWidth  int            // that width: a resize draws them again
	summaries []lab.Event    // the run's summary events, for the results
	tables    []render.Table // the lesson's measured tables, once it returned
	pane      pane
	flash     string
	noBroker  string // why no broker answered, read whole in the notice pane (i)

	met       *metrics.Metrics // this run's own, read for the panel (Config.Metrics spans runs)
	metTotals metrics.Totals   // what the panel shows, read in Update
	metricsOn bool             // the metrics panel is open (m)

	stores      *lesson.Stores      // this run's status stores (Options.Stores)
	storeStates []lesson.StoreState // as last read, for the store panel
	storesFinal bool                // storeStates were read after the run returned
}

// lessonItem adapts a lesson to the menu list.
type lessonItem struct{ l lesson.Lesson }

func (i lessonItem) Title() string { return fmt.Sprintf("%d · %s", i.l.Number(), i.l.Title) }
func (i lessonItem) Description() string {
	var b []string
	for _, be := range i.l.Backends() {
		b = append(b, string(be))
	}
	return strings.Join(b, ", ") + " — " + i.l.Notice
}
func (i lessonItem) FilterValue() string { return i.l.ID + " " + i.l.Title }

// New builds the model. It fails, with a message for the user, when
// cfg.Start names no lesson of the menu or the configuration is unusable.
func New(cfg Config) (Model, error) {
	if len(cfg.Lessons) == 0 {
		cfg.Lessons = lessons.All
	}
	if cfg.Speed < 0 || cfg.Speed != cfg.Speed {
		return Model{}, fmt.Errorf("speed must be a positive number, got %v", cfg.Speed)
	}
	if cfg.Backend == lab.Rabbit && cfg.Broker == nil {
		return Model{}, errors.New("the RabbitMQ backend is not available in this build")
	}
	items := make([]list.Item, len(cfg.Lessons))
	for i, l := range cfg.Lessons {
		items[i] = lessonItem{l}
	}
	menu := list.New(items, list.NewDefaultDelegate(), 80, 20)
	menu.Title = "QueueLab — pick a lesson (enter runs it, / filters, q quits)"
	menu.KeyMap.Quit.SetKeys("q") // not esc: esc clears a filter, and comes back here from a lesson
	m := Model{
		cfg: cfg, lessons: cfg.Lessons, menu: menu, help: help.New(), keys: newKeyMap(),
		st: newStyles(cfg.Color), width: 80, height: 24, log: viewport.New(80, 10),
		chosen: cfg.Backend, backend: cfg.Backend, sc: newScene(nil),
	}
	if cfg.Start != 0 {
		i := m.indexOf(cfg.Start)
		if i < 0 {
			return Model{}, fmt.Errorf("unknown lesson %d (see qlab list)", cfg.Start)
		}
		if cfg.Backend != "" && cfg.Lessons[i].Runner(cfg.Backend) == nil {
			return Model{}, lesson.ErrNoBackend{Lesson: cfg.Lessons[i], Backend: cfg.Backend}
		}
		m.cur, m.screen = i, lessonScreen
		m.nextSpeed = m.lessonSpeed()
		m.speed = m.nextSpeed
		m.backend, _ = m.pickBackend()
		if m.backend == lab.Rabbit {
			m.state = seeking // Init starts discovery
		}
	}
	return m, nil
}

// defaultSpeed is slow enough to follow a token from box to box.
const defaultSpeed = 0.25

// lessonSpeed is the speed the open lesson starts at: the one the user
// gave on the command line, else the lesson's own.
func (m Model) lessonSpeed() float64 {
	if m.cfg.Speed > 0 {
		return m.cfg.Speed
	}
	if s := m.lesson().WatchSpeed; s > 0 {
		return s
	}
	return defaultSpeed
}

func (m Model) indexOf(n int) int {
	for i, l := range m.lessons {
		if l.Number() == n {
			return i
		}
	}
	return -1
}

func (m Model) lesson() lesson.Lesson { return m.lessons[m.cur] }

// Init starts the lesson given in Config.Start, if any.
func (m Model) Init() tea.Cmd {
	if m.screen != lessonScreen {
		return nil
	}
	if m.state == seeking {
		return brokerCmd(m.cfg.Broker, m.cur)
	}
	return func() tea.Msg { return startMsg{} }
}

// startMsg asks Update to (re)start the open lesson.
type startMsg struct{}

// Update handles keys, resizes, event batches and the run's end.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.menu.SetSize(msg.Width, msg.Height)
		m.help.Width = msg.Width
		if m.logWidth != m.width && len(m.logged) > 0 {
			m.relog()
		}
		m.fillPane()
		return m, nil
	case startMsg:
		return m.start()
	case eventsMsg:
		return m.onEvents(msg)
	case runDoneMsg:
		if msg.gen == m.gen {
			m.runDone, m.tables, m.missed = true, msg.tables, msg.missed
			m.readMetrics() // every sink has had every event: the final counts
			if !errors.Is(msg.err, context.Canceled) {
				m.runErr = msg.err
			}
			m.settle()
			return m, finalStoresCmd(m.gen, m.stores) // every store closed: their final counts
		}
		return m, nil
	case storesMsg:
		return m.onStores(msg)
	case brokerMsg:
		return m.onBroker(msg)
	case noteMsg:
		return m.onNote(msg)
	case actMsg:
		if msg.gen == m.gen && msg.fault {
			m.addNote(msg.key + ": " + msg.line) // what broke stays in the log, beside its consequence
		} else if msg.gen == m.gen {
			m.flash = msg.key + ": " + msg.line
		}
		return m, nil
	case tea.KeyMsg:
		if keys := splitKeys(msg); len(keys) > 1 {
			return m.eachKey(keys)
		}
		if m.screen == menuScreen {
			return m.menuKey(msg)
		}
		return m.lessonKey(msg)
	}
	var cmd tea.Cmd
	if m.screen == lessonScreen {
		m.log, cmd = m.log.Update(msg)
	} else {
		m.menu, cmd = m.menu.Update(msg) // the filter's matches come back as a message
	}
	return m, cmd
}

// splitKeys is msg as the keys a person pressed. Keys typed faster than
// the terminal is read (p p p, or tmux send-keys) reach bubbletea in one
// read, which it hands over as one KeyMsg of several runes ("ppp"), a
// string no binding matches; a paste stays one message.
func splitKeys(msg tea.KeyMsg) []tea.KeyMsg {
	if msg.Type != tea.KeyRunes || msg.Paste || len(msg.Runes) < 2 {
		return []tea.KeyMsg{msg}
	}
	keys := make([]tea.KeyMsg, len(msg.Runes))
	for i, r := range msg.Runes {
		keys[i] = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}
	}
	return keys
}

// eachKey applies keys in order, as if each had come alone, and runs
// their commands together; a quit ends the run of keys.
func (m Model) eachKey(keys []tea.KeyMsg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	for _, k := range keys {
		next, cmd := m.Update(k)
		m = next.(Model)
		cmds = append(cmds, cmd)
		if m.quitting {
			break
		}
	}
	return m, tea.Batch(cmds...)
}

// menuKey handles a key on the menu. The list filters (/), and Esc
// clears a filter; Esc on the whole list does not quit, since Esc in a
// lesson comes back here and a second Esc would end the program: q does.
func (m Model) menuKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	filtering := m.menu.FilterState() == list.Filtering
	switch {
	case msg.String() == "ctrl+c", msg.String() == "q" && !filtering:
		m.quitting = true
		return m, tea.Quit
	case msg.String() == "esc" && m.menu.FilterState() == list.Unfiltered:
		return m, m.menu.NewStatusMessage("esc comes back here from a lesson · q quits")
	case msg.String() == "enter" && !filtering:
		if it, ok := m.menu.SelectedItem().(lessonItem); ok {
			m.cur, m.screen = m.indexOf(it.l.Number()), lessonScreen
			m.nextSpeed = m.lessonSpeed()
			return m.start()
		}
		return m, nil
	}
	var cmd tea.Cmd
	m.menu, cmd = m.menu.Update(msg)
	return m, cmd
}

// selectInMenu puts the menu's cursor on the open lesson; a filter that
// hides it is cleared.
func (m *Model) selectInMenu() {
	for i, it := range m.menu.VisibleItems() {
		if li, ok := it.(lessonItem); ok && li.l.ID == m.lesson().ID {
			m.menu.Select(i)
			return
		}
	}
	m.menu.ResetFilter()
	m.menu.Select(m.cur)
}

func (m Model) lessonKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		m.stop()
		m.quitting = true
		return m, tea.Quit
	case key.Matches(msg, k.Pause):
		return m.togglePause()
	case key.Matches(msg, k.Results):
		if m.state == finished || m.state == failed {
			m.showPane(map[bool]pane{true: logPane, false: resultsPane}[m.pane == resultsPane])
		}
		return m, nil
	case key.Matches(msg, k.Notice):
		m.showPane(map[bool]pane{true: logPane, false: noticePane}[m.pane == noticePane])
		return m, nil
	case key.Matches(msg, k.Faster):
		m.nextSpeed = step(m.nextSpeed, +1)
		m.flash = "speed " + speedText(m.nextSpeed) + " from the next run: press r to restart with it"
		return m, nil
	case key.Matches(msg, k.Slower):
		m.nextSpeed = step(m.nextSpeed, -1)
		m.flash = "speed " + speedText(m.nextSpeed) + " from the next run: press r to restart with it"
		return m, nil
	case key.Matches(msg, k.Restart):
		return m.start()
	case key.Matches(msg, k.Next), key.Matches(msg, k.Prev):
		d := 1
		if key.Matches(msg, k.Prev) {
			d = -1
		}
		m.cur = (m.cur + d + len(m.lessons)) % len(m.lessons)
		m.nextSpeed = m.lessonSpeed()
		return m.start() // keeps the chosen backend where the next lesson has it
	case key.Matches(msg, k.Backend):
		return m.switchBackend()
	case key.Matches(msg, m.acts()...): // a lesson's own key wins over a fault key
		return m.act(msg.String())
	case key.Matches(msg, k.Cut), key.Matches(msg, k.Hold):
		return m.fault(msg.String())
	case key.Matches(msg, k.Metrics):
		m.metricsOn = !m.metricsOn
		m.readMetrics()
		m.fillPane()
		return m, nil
	case key.Matches(msg, k.Menu):
		m.stop()
		m.screen = menuScreen
		m.selectInMenu()
		return m, nil
	}
	var cmd tea.Cmd
	m.log, cmd = m.log.Update(msg)
	return m, cmd
}

// acts are the open lesson's own keys (Lesson.Actions).
func (m Model) acts() []key.Binding { return actionKeys(m.lesson().Actions) }

// helpActs are the keys the help line lists besides the view's own: the
// lesson's, then a broker run's fault keys.
func (m Model) helpActs() []key.Binding {
	acts := m.acts()
	if m.backend != lab.Rabbit {
		return acts
	}
	for _, f := range []key.Binding{m.keys.Cut, m.keys.Hold} {
		if !key.Matches(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(f.Keys()[0])}, acts...) {
			acts = append(acts, f)
		}
	}
	return acts
}

// fault breaks, at the student's key, the broker run's own connections
// (x) or the channel of a worker holding a delivery (c), from a command;
// what it broke comes back as an actMsg, and the consequence (a
// redelivery, a reconnect) in the log.
func (m Model) fault(k string) (tea.Model, tea.Cmd) {
	switch {
	case m.backend != lab.Rabbit:
		m.flash = k + " breaks a broker run's connections; this one runs in memory"
		if m.lesson().Dual() {
			m.flash += " (b: RabbitMQ)"
		}
		return m, nil
	case m.state != running || m.run == nil:
		m.flash = k + " acts while the lesson runs: r starts it again"
		return m, nil
	case m.paused:
		m.flash = "paused: space resumes, then " + k
		return m, nil
	}
	if k == holdKey {
		m.flash = k + ": waiting for a worker to hold a delivery…"
	} else {
		m.flash = k + ": cutting the run's connections…"
	}
	return m, faultCmd(m.run, k)
}

// onNote shows a line the run's backend logged (a connection lost, a
// reconnect, Q21's node stopped) in the status line and the log, and
// waits for the next.
func (m Model) onNote(msg noteMsg) (tea.Model, tea.Cmd) {
	if m.run == nil || msg.gen != m.gen {
		return m, nil // an old run's: its command ends with it
	}
	m.addNote(msg.line)
	return m, noteCmd(m.run)
}

// addNote shows line in the status line, and whole in the log.
func (m *Model) addNote(line string) {
	m.flash = line
	m.logged = append(m.logged, lab.Event{Kind: noteKind, Note: line, TMs: m.clockMs})
	m.logLines = append(m.logLines, m.logLine(m.logged[len(m.logged)-1]))
	m.fillPane()
}

// noteKind marks a logged line that is no event but a note of the
// backend's (onNote).
const noteKind lab.Kind = ""

// act hands one of the lesson's own keys to its run, from a command; the
// lesson's answer comes back as an actMsg and shows in the status line.
func (m Model) act(k string) (tea.Model, tea.Cmd) {
	switch {
	case m.state != running || m.run == nil || m.run.act == nil:
		m.flash = k + " acts while the lesson runs: r starts it again"
		return m, nil
	case m.paused:
		m.flash = "paused: space resumes, then " + k
		return m, nil
	}
	m.flash = k + ": handed to the lesson…"
	return m, actCmd(m.run, k)
}

// step moves speed one step up (dir +1) or down the speeds list. A
// lesson's own speed above the list (Q14's 100×, Q18's 600×) stays on +
// and comes down to the list's top on -.
func step(speed float64, dir int) float64 {
	if top := speeds[len(speeds)-1]; speed > top {
		if dir > 0 {
			return speed
		}
		return top
	}
	i := 0
	for i < len(speeds)-1 && speeds[i] < speed {
		i++
	}
	return speeds[min(max(i+dir, 0), len(speeds)-1)]
}

// pickBackend returns the backend the open lesson runs on: the one the
// user chose where the lesson has it (explicit), else the lesson's default.
func (m Model) pickBackend() (b lab.Backend, explicit bool) {
	l := m.lesson()
	if m.chosen != "" && l.Runner(m.chosen) != nil {
		return m.chosen, true
	}
	return l.DefaultBackend(), false
}

// start cancels the current run, if any, and starts the open lesson
// afresh, after broker discovery where it needs one.
func (m Model) start() (tea.Model, tea.Cmd) {
	prev := m.run
	m.stop()
	l := m.lesson()
	m.backend, _ = m.pickBackend()
	m.sc, m.run, m.paused, m.held = newScene(nil), nil, false, nil
	m.logged, m.logLines, m.summaries, m.tables, m.pane, m.flash = nil, nil, nil, nil, logPane, ""
	m.log.SetContent("")
	if m.backend == lab.Rabbit && m.broker == "" {
		return m, m.seek()
	}
	var explicit []Node
	if m.cfg.Topology != nil {
		explicit = m.cfg.Topology(l)
	}
	m.gen++
	m.speed = m.nextSpeed
	m.sc, m.frame, m.clockMs, m.lastAt = newScene(explicit), 0, 0, time.Time{}
	m.state, m.runDone, m.runErr, m.closed = running, false, nil, false
	m.stores, m.storeStates, m.storesFinal = &lesson.Stores{}, nil, false
	opts := lesson.Options{Backend: m.backend, Speed: m.speed, Plan: m.cfg.Plan, Broker: m.broker,
		Stores: m.stores}
	m.met, m.metTotals = metrics.New(), metrics.Totals{}
	sinks := []lab.Sink{m.met}
	if m.cfg.Metrics != nil {
		sinks = append(sinks, m.cfg.Metrics)
	}
	h, runCmd := startRun(m.gen, l, opts, sinks...)
	if prev != nil && prev.cluster && !ended(prev) {
		h.after = prev.finished // it may be reviving a node: this run starts once it is done
		m.flash = waitingFlash
	}
	m.run, m.pumping = h, true
	m.fitLog()
	return m, tea.Batch(runCmd, waitCmd(h), noteCmd(h), storesCmd(m.gen, m.stores, storesEvery))
}

// onStores takes a read of the run's stores and asks for the next while
// the run goes; the panel's rows change the log's height.
func (m Model) onStores(msg storesMsg) (tea.Model, tea.Cmd) {
	if msg.gen != m.gen || m.storesFinal {
		return m, nil // another run's, or a tick read before the final one
	}
	rows := m.storeRows()
	m.storeStates, m.storesFinal = msg.states, msg.final
	if m.storeRows() != rows {
		m.fitLog()
	}
	if m.runDone {
		return m, nil
	}
	return m, storesCmd(m.gen, m.stores, storesEvery)
}

// seek starts broker discovery for the open lesson, or says why it can't.
func (m *Model) seek() tea.Cmd {
	m.run = nil
	if m.cfg.Broker == nil {
		m.state, m.brokerErr = noBroker, "RabbitMQ is not available in this build"
		return nil
	}
	m.state = seeking
	return brokerCmd(m.cfg.Broker, m.cur)
}

// readMetrics takes the panel's figures from this run's metrics, while
// the panel is open (a read of the registry, never in View).
func (m *Model) readMetrics() {
	if m.metricsOn && m.met != nil {
		m.metTotals = m.met.Totals(metrics.Run{Lesson: m.lesson().Slug(), Backend: m.backend})
	}
}

// settle notes the end of the run once lesson.Run has returned and every
// event it sent is drawn, and shows the results.
func (m *Model) settle() {
	if !m.runDone || !m.closed || m.state != running {
		return
	}
	m.state = finished
	if m.runErr != nil {
		m.state = failed
	}
	m.flash = "" // a passing note of the run's: the end and what next matter now
	m.showPane(resultsPane)
}

// showPane switches the pane to p, at its top (the log: at its tail).
func (m *Model) showPane(p pane) {
	m.pane = p
	m.fillPane()
	if p != logPane {
		m.log.GotoTop()
	} else {
		m.log.GotoBottom()
	}
}

// stop cancels the current run. The run ends on its own; its late
// messages carry an old gen and are ignored.
func (m *Model) stop() {
	if m.run != nil {
		m.run.cancel()
	}
}

// waitingFlash says a run waits for the cancelled cluster run before it;
// its first event clears it.
const waitingFlash = "the last run is reviving the node it stopped: this one starts once it is done"

// ended reports whether run h has returned (it never waits).
func ended(h *runHandle) bool {
	select {
	case <-h.finished:
		return true
	default:
		return false
	}
}

// awaitStop waits up to d for a cancelled run to return, and reports
// whether it did (true without a run).
func (m Model) awaitStop(d time.Duration) bool {
	if m.run == nil {
		return true
	}
	select {
	case <-m.run.finished:
		return true
	case <-time.After(d):
		return false
	}
}

// togglePause pauses or resumes the running lesson. Paused, the lesson's
// clock holds (in memory its timers wait too; a broker's TTLs do not) and
// the run's gate shuts, so the lesson stops at its next event; the model
// holds whatever a command had already brought instead of drawing it.
// Resuming applies the held events and lets the lesson go on.
func (m Model) togglePause() (tea.Model, tea.Cmd) {
	if m.state != running {
		return m, nil
	}
	m.paused = !m.paused
	var cmd tea.Cmd
	if m.run != nil {
		cmd = pauseCmd(m.run, m.paused)
	}
	if m.paused {
		return m, cmd
	}
	held := m.held
	m.held = nil
	m.lastAt = time.Time{}
	m.applyEvents(held)
	return m, tea.Batch(cmd, m.pump(len(held) > 0))
}

// onEvents applies a batch, advances the frame, and decides what reads
// the channel next: a frame tick while anything moves, a blocking wait
// when all is still, nothing while paused or after the end.
func (m Model) onEvents(msg eventsMsg) (tea.Model, tea.Cmd) {
	if msg.gen != m.gen {
		return m, nil
	}
	m.pumping = false
	m.closed = m.closed || msg.closed
	if m.paused {
		m.held = append(m.held, msg.events...)
		return m, nil
	}
	if msg.frame {
		m.frame++
		if !m.lastAt.IsZero() {
			m.clockMs += m.run2lesson(msg.at.Sub(m.lastAt))
		}
		m.lastAt = msg.at
	}
	m.applyEvents(msg.events)
	m.readMetrics()
	m.sc.advance(m.clockMs, m.frame)
	cmd := m.pump(len(msg.events) > 0)
	m.settle()
	return m, cmd
}

// run2lesson converts real time to the lesson time it stands for.
func (m Model) run2lesson(d time.Duration) int64 {
	return int64(float64(d.Milliseconds()) * m.speed)
}

// pump returns the command that next reads the channel, or nil. Exactly
// one such command is outstanding per run (m.pumping), so frames never
// double up.
func (m *Model) pump(fresh bool) tea.Cmd {
	if m.pumping || m.paused || m.run == nil {
		return nil
	}
	moving := m.sc.prune(m.frame)
	var cmd tea.Cmd
	switch {
	case moving || (fresh && !m.closed):
		cmd = frameCmd(m.run, frameEvery) // coalesce what comes next on the frame clock
	case m.sc.counting(m.clockMs):
		cmd = frameCmd(m.run, countEvery)
	case m.closed:
		return nil
	default:
		m.lastAt = time.Time{} // idle: no ticks; the next event sets the clock
		cmd = waitCmd(m.run)
	}
	m.pumping = true
	return cmd
}

// applyEvents folds events into the scene and the log.
func (m *Model) applyEvents(evs []lab.Event) {
	if len(evs) == 0 {
		return
	}
	m.logWidth = m.width
	if m.flash == waitingFlash {
		m.flash = ""
	}
	for _, e := range evs {
		m.sc.apply(e, m.frame)
		m.clockMs = max(m.clockMs, e.TMs)
		if e.Kind == lab.Summary {
			m.summaries = append(m.summaries, e)
		}
		if line := m.logLine(e); line != "" {
			m.logged = append(m.logged, e)
			m.logLines = append(m.logLines, line)
		}
	}
	if over := len(m.logLines) - logKeep; over > 0 {
		m.logged = append(m.logged[:0:0], m.logged[over:]...)
		m.logLines = append(m.logLines[:0:0], m.logLines[over:]...)
	}
	m.fillPane()
}

// logLine is e's log line as qlab run prints it, wrapped to the view's
// width rather than cut; "" for an event without one.
func (m Model) logLine(e lab.Event) string {
	if e.Kind == noteKind {
		lines := render.Wrap("⚡ "+e.Note, m.width, "   ")
		for i := range lines {
			lines[i] = m.st.paint(warn, lines[i])
		}
		return sanitize(strings.Join(lines, "\n"))
	}
	return sanitize(render.Style{Color: m.cfg.Color, Width: m.width}.Line(e))
}

// relog draws the log's lines again at the view's width, after a resize.
func (m *Model) relog() {
	m.logWidth = m.width
	for i, e := range m.logged {
		m.logLines[i] = m.logLine(e)
	}
}

// fillPane puts the log, the results or the notice into the pane. The log
// follows its tail unless the user scrolled up, however the rows above it
// change; the others stay where the user scrolled them.
func (m *Model) fillPane() {
	follow := m.log.AtBottom() || m.log.TotalLineCount() == 0
	m.fitLog()
	switch m.pane {
	case resultsPane:
		m.log.SetContent(m.results())
		return
	case noticePane:
		text := "Notice: " + m.lesson().NoticeFor(m.backend)
		if m.noBroker != "" && m.backend == lab.InMem {
			text += "\n\nIn memory because no RabbitMQ broker answered: " + m.noBroker
		}
		m.log.SetContent(sanitize(strings.Join(render.Wrap(text, m.width, ""), "\n")))
		return
	}
	m.log.SetContent(strings.Join(m.logLines, "\n"))
	if follow {
		m.log.GotoBottom()
	}
}

// sanitize drops the emoji variation selector (U+FE0F) from a line the
// TUI draws: it makes ♻ or 🗑 two columns wide for a renderer that reads
// graphemes but one for a terminal that counts characters (tmux), and the
// two would disagree on where the line ends.
func sanitize(s string) string { return strings.ReplaceAll(s, "\uFE0F", "") }

// results is the closing tables: the lesson's measurements first (the
// point of Q03, Q05, Q06, Q11–Q13), then what happened to each task.
func (m Model) results() string {
	var b strings.Builder
	if m.state == failed { // the status line holds only its start
		b.WriteString(strings.Join(render.Wrap(m.failText(), m.width, ""), "\n") + "\n\n")
	}
	layout := render.LayoutFor(m.width)
	for _, t := range m.tables {
		t.Fit(&b, layout)
		b.WriteString("\n")
	}
	render.WhatHappened(m.summaries).Fit(&b, layout)
	return sanitize(strings.TrimRight(b.String(), "\n"))
}

// switchBackend flips between in-memory and RabbitMQ where the lesson has
// both. RabbitMQ needs a broker: discovery runs in a command, and the
// in-memory run goes on until one answers.
func (m Model) switchBackend() (tea.Model, tea.Cmd) {
	l := m.lesson()
	if !l.Dual() {
		m.flash = fmt.Sprintf("%s runs on %s only", l.ID, l.Backends()[0])
		return m, nil
	}
	if m.backend == lab.Rabbit || m.state == noBroker {
		m.chosen = lab.InMem
		return m.start()
	}
	m.chosen = lab.Rabbit
	if m.broker != "" {
		return m.start()
	}
	if m.cfg.Broker == nil {
		m.chosen = lab.InMem
		m.flash = l.ID + " needs RabbitMQ for that, which is not available in this build"
		return m, nil
	}
	m.flash = "looking for a RabbitMQ broker…"
	return m, brokerCmd(m.cfg.Broker, m.cur)
}

// onBroker takes discovery's answer. A broker found starts the run on it.
// None found: a switch from a live in-memory run stays there; a lesson
// whose RabbitMQ run is only its default runs its in-memory twin and says
// so; a backend the user named shows the no-broker state.
func (m Model) onBroker(msg brokerMsg) (tea.Model, tea.Cmd) {
	if msg.lesson != m.cur || m.screen != lessonScreen {
		return m, nil
	}
	if msg.err == nil {
		m.broker, m.noBroker = msg.url, ""
		return m.start()
	}
	why := firstLine(msg.err.Error())
	if m.state != seeking { // the user pressed b during an in-memory run
		m.chosen = lab.InMem
		m.flash, m.noBroker = "no RabbitMQ broker, so this stays in memory · i: why", why
		m.fillPane()
		return m, nil
	}
	l := m.lesson()
	if _, explicit := m.pickBackend(); !explicit && l.InMem != nil {
		m.chosen = lab.InMem
		next, cmd := m.start()
		m = next.(Model)
		m.flash = fmt.Sprintf("no RabbitMQ broker, so %s runs its in-memory twin (start one, then b) · i: why", l.ID)
		m.noBroker = why
		m.fillPane()
		return m, cmd
	}
	m.state, m.brokerErr = noBroker, why
	return m, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// noticeRows is how many lines the notice may take at the current height.
func (m Model) noticeRows() int {
	if m.height >= 24 {
		return 3
	}
	return 1
}

// fitLog sizes the log pane to what the rest of the lesson view leaves,
// keeping it at its tail if it was there.
func (m *Model) fitLog() {
	bottom := m.log.AtBottom()
	m.log.Width = m.width
	m.log.Height = max(m.height-m.chromeRows(), 1)
	if bottom && m.pane == logPane {
		m.log.GotoBottom()
	}
}

// chromeRows counts the lesson view's lines besides the log pane.
func (m Model) chromeRows() int {
	if m.pane != logPane {
		return 5 + m.panelRows() // header, status line, stats, pane rule, help: the pane takes the rest
	}
	boxLines := 1
	if s := m.sc.slots(m.width); len(s) > 0 {
		boxLines = (s[len(s)-1].row + 1) * (boxRows + 1)
	} else if m.state == noBroker || m.state == failed {
		boxLines = max(len(m.whyLines(m.width))-1, 1)
	}
	if m.sc.phases > 0 {
		boxLines++
	}
	// header, notice, status line, boxes, fates, stats, log rule, help
	n := 1 + len(noticeLines(m.lesson().NoticeFor(m.backend), m.width, m.noticeRows())) + 1 + boxLines + 1 + 1 + 1 + 1 + m.panelRows()
	if m.sc.breaker.seen {
		n++
	}
	return n
}

// View draws the menu or the lesson view.
func (m Model) View() string {
	if m.screen == menuScreen {
		return m.menu.View()
	}
	w := m.width
	var out []string
	out = append(out, m.header(w))
	if m.pane == logPane { // the results and the notice take the stage's rows
		out = append(out, noticeLines(m.lesson().NoticeFor(m.backend), w, m.noticeRows())...)
	}
	out = append(out, m.statusLine(w))
	if m.pane == logPane {
		out = append(out, m.stage(w)...)
		out = append(out, m.fates(w))
		if m.sc.breaker.seen {
			out = append(out, clip(m.breakerLine(), w))
		}
	}
	out = append(out, m.statsLine(w))
	out = append(out, m.storePanel(w)...)
	out = append(out, m.metricsPanel(w)...)
	out = append(out, m.paneRule(w))
	out = append(out, m.log.View())
	out = append(out, clip(m.help.ShortHelpView(m.keys.helpFor(m.state, w, m.helpActs())), w))
	return sanitize(strings.Join(out, "\n"))
}

// paneRule heads the pane: which it is, and the legend of the tokens'
// marks while the log shows.
func (m Model) paneRule(w int) string {
	head := "── log · " + legend + " "
	switch m.pane {
	case resultsPane:
		head = "── results (t: the log · ↑/↓ scroll) "
	case noticePane:
		head = "── what to notice (i: the log · ↑/↓ scroll) "
	}
	head = clip(head, w)
	return m.st.paint(faint, head+strings.Repeat("─", max(w-len([]rune(head)), 0)))
}

// statusLine is the line under the notice: what the run's state asks of
// the user, or a passing message.
func (m Model) statusLine(w int) string {
	switch {
	case m.state == failed, m.state == noBroker:
		return m.st.paint(bad, m.whyLines(w)[0])
	case m.paused && m.backend == lab.Rabbit:
		return m.st.paint(warn, clip("paused: RabbitMQ's TTLs keep running, so a wait may read short (space resumes)", w))
	case m.paused:
		return m.st.paint(warn, clip("paused: lesson time stands still, timers too (space resumes)", w))
	case m.flash != "":
		return m.st.paint(warn, clipWords(m.flash, w))
	case m.state == finished && m.missed > 0:
		return m.st.paint(warn, clip(fmt.Sprintf("finished · the view fell behind and missed %d events · r replays, - slows it", m.missed), w))
	case m.state == finished:
		return m.st.paint(good, clip("finished · "+m.nextStep()+" · r replays · t the log", w))
	}
	return ""
}

// whyLines says why the run did not start (no broker) or failed, whole,
// wrapped to width w: the status line shows the first line, the stage
// (empty when the run failed before its first event) the rest; a run
// that failed later has the rest at the top of its results.
func (m Model) whyLines(w int) []string {
	text := m.noBrokerText()
	if m.state == failed {
		text = m.failText()
	}
	return render.Wrap(text, max(w, 20), "")
}

// failText is the run's error in full, with what to do next.
func (m Model) failText() string {
	return "the run failed: " + strings.TrimSpace(m.runErr.Error()) + " · " + m.nextStep()
}

// noBrokerText says why the run cannot start and what to do.
func (m Model) noBrokerText() string {
	text := "no RabbitMQ broker: " + m.brokerErr + " · r tries again"
	if m.lesson().InMem != nil {
		text += " · b runs it in memory"
	}
	return text
}

// nextStep is the "Next:" pointer: the lesson after this one, or, after
// the last, where to go from there.
func (m Model) nextStep() string {
	if m.cur+1 < len(m.lessons) {
		return fmt.Sprintf("Next: qlab tui %d (n)", m.lessons[m.cur+1].Number())
	}
	return "that was the last lesson · Next: qlab compare 10 (both backends side by side), or esc for the menu"
}

package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/metrics"
	"github.com/queuelab/qlab/render"
)

// speeds are the steps + and - walk through.
var speeds = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 50}

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

// Model is the bubbletea model of the whole TUI: the lesson menu and the
// lesson view. It composes the view's components, each with its own
// state, Update and View — the menu, the run's session, the stage (the
// scene), the log pane, the status lines and the panels — and routes the
// messages among them; what concerns more than one of them (starting a
// run, a batch of events, the run's end) it does itself. View is a pure
// function of it; everything that touches the world happens in commands.
type Model struct {
	cfg     Config
	lessons []lesson.Lesson
	cur     int // index of the open lesson
	screen  screen
	width   int
	height  int
	// quitting: a quit key was taken; keys that came with it are dropped.
	quitting bool
	keys     keyMap
	help     help.Model
	st       styles

	menu   menu
	run    session
	scene  stage
	log    logView
	status statusBar
	panels panels
}

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
	st := newStyles(cfg.Color)
	m := Model{
		cfg: cfg, lessons: cfg.Lessons, menu: newMenu(cfg.Lessons), help: help.New(), keys: newKeyMap(),
		st: st, width: 80, height: 24, log: newLogView(st, cfg.Color), scene: newStage(nil, st),
		status: statusBar{st: st}, panels: panels{st: st, url: cfg.MetricsURL},
		run: session{chosen: cfg.Backend, backend: cfg.Backend},
	}
	if cfg.Start != 0 {
		i := indexOf(cfg.Lessons, cfg.Start)
		if i < 0 {
			return Model{}, fmt.Errorf("unknown lesson %d (see qlab list)", cfg.Start)
		}
		if cfg.Backend != "" && cfg.Lessons[i].Runner(cfg.Backend) == nil {
			return Model{}, lesson.ErrNoBackend{Lesson: cfg.Lessons[i], Backend: cfg.Backend}
		}
		m.cur, m.screen = i, lessonScreen
		m.run.nextSpeed = lessonSpeed(cfg, m.lesson())
		m.run.speed = m.run.nextSpeed
		m.run.backend, _ = m.run.pick(m.lesson())
		if m.run.backend == lab.Rabbit {
			m.run.state = seeking // Init starts discovery
		}
	}
	return m, nil
}

// defaultSpeed is slow enough to follow a token from box to box.
const defaultSpeed = 0.25

// lessonSpeed is the speed lesson l starts at: the one the user gave on
// the command line, else the lesson's own.
func lessonSpeed(cfg Config, l lesson.Lesson) float64 {
	if cfg.Speed > 0 {
		return cfg.Speed
	}
	if s := l.WatchSpeed; s > 0 {
		return s
	}
	return defaultSpeed
}

// indexOf is the index in ls of lesson number n, or -1.
func indexOf(ls []lesson.Lesson, n int) int {
	for i, l := range ls {
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
	if m.run.state == seeking {
		return brokerCmd(m.cfg.Broker, m.cur)
	}
	return func() tea.Msg { return startMsg{} }
}

// startMsg asks Update to (re)start the open lesson.
type startMsg struct{}

// Update routes keys, resizes, event batches and the run's messages to
// the components they concern.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.menu.list.SetSize(msg.Width, msg.Height)
		m.help.Width = msg.Width
		m.log.resize(m.width)
		m.fillPane()
		return m, nil
	case startMsg:
		return m.start()
	case eventsMsg:
		return m.onEvents(msg)
	case runDoneMsg:
		if msg.gen != m.run.gen {
			return m, nil
		}
		m.run = m.run.Update(msg)
		m.panels, cmd = m.panels.Update(msg)        // the stores read once more, all closed
		m.panels.read(m.run.metricsRun(m.lesson())) // every sink has had every event: the final counts
		m.settle()
		return m, cmd
	case storesMsg:
		rows := m.panels.rows()
		m.panels, cmd = m.panels.Update(msg)
		if m.panels.rows() != rows { // the panel's rows change the log's height
			m.log.fit(m.width, m.height-m.chromeRows())
		}
		return m, cmd
	case brokerMsg:
		return m.onBroker(msg)
	case noteMsg: // a line the run's backend logged: shown, and the next awaited
		if m.run.h == nil || msg.gen != m.run.gen {
			return m, nil // an old run's: its command ends with it
		}
		m.addNote(msg.line)
		return m, noteCmd(m.run.h)
	case actMsg:
		if msg.gen == m.run.gen && msg.fault {
			m.addNote(msg.key + ": " + msg.line) // what broke stays in the log, beside its consequence
		} else if msg.gen == m.run.gen {
			m.status = m.status.Update(msg)
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

// menuKey handles a key on the menu: q quits and enter opens the lesson
// under the cursor, unless the user is typing a filter; the menu takes
// the rest.
func (m Model) menuKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	filtering := m.menu.filtering()
	switch {
	case msg.String() == "ctrl+c", msg.String() == "q" && !filtering:
		m.quitting = true
		return m, tea.Quit
	case msg.String() == "enter" && !filtering:
		if l, ok := m.menu.picked(); ok {
			m.cur, m.screen = indexOf(m.lessons, l.Number()), lessonScreen
			m.run.nextSpeed = lessonSpeed(m.cfg, l)
			return m.start()
		}
		return m, nil
	}
	var cmd tea.Cmd
	m.menu, cmd = m.menu.Update(msg)
	return m, cmd
}

// lessonKey handles a key in the lesson view; the log pane scrolls on
// the keys no binding takes.
func (m Model) lessonKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	var cmd tea.Cmd
	switch {
	case key.Matches(msg, k.Quit):
		m.run.stop()
		m.quitting = true
		return m, tea.Quit
	case key.Matches(msg, k.Pause):
		return m.togglePause()
	case key.Matches(msg, k.Results):
		if m.run.state == finished || m.run.state == failed {
			m.showPane(map[bool]pane{true: logPane, false: resultsPane}[m.log.pane == resultsPane])
		}
		return m, nil
	case key.Matches(msg, k.Notice):
		m.showPane(map[bool]pane{true: logPane, false: noticePane}[m.log.pane == noticePane])
		return m, nil
	case key.Matches(msg, k.Faster), key.Matches(msg, k.Slower):
		dir := +1
		if key.Matches(msg, k.Slower) {
			dir = -1
		}
		m.run.nextSpeed = step(m.run.nextSpeed, dir)
		m.status.flash = "speed " + speedText(m.run.nextSpeed) + " from the next run: press r to restart with it"
		return m, nil
	case key.Matches(msg, k.Restart):
		return m.start()
	case key.Matches(msg, k.Next), key.Matches(msg, k.Prev):
		d := 1
		if key.Matches(msg, k.Prev) {
			d = -1
		}
		m.cur = (m.cur + d + len(m.lessons)) % len(m.lessons)
		m.run.nextSpeed = lessonSpeed(m.cfg, m.lesson())
		return m.start() // keeps the chosen backend where the next lesson has it
	case key.Matches(msg, k.Backend):
		return m.switchBackend()
	case key.Matches(msg, actionKeys(m.lesson().Actions)...): // a lesson's own key wins over a fault key
		m.status.flash, cmd = m.run.act(msg.String())
		return m, cmd
	case key.Matches(msg, k.Cut), key.Matches(msg, k.Hold):
		m.status.flash, cmd = m.run.fault(msg.String(), m.lesson().Dual())
		return m, cmd
	case key.Matches(msg, k.Metrics):
		m.panels.on = !m.panels.on
		m.panels.read(m.run.metricsRun(m.lesson()))
		m.fillPane()
		return m, nil
	case key.Matches(msg, k.Menu):
		m.run.stop()
		m.screen = menuScreen
		m.menu.show(m.lesson(), m.cur)
		return m, nil
	}
	m.log, cmd = m.log.Update(msg)
	return m, cmd
}

// addNote shows line in the status line, and whole in the log.
func (m *Model) addNote(line string) {
	m.status.flash = line
	m.log.note(line, m.scene.clock, m.width)
	m.fillPane()
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

// start cancels the current run, if any, and starts the open lesson
// afresh, after broker discovery where it needs one.
func (m Model) start() (tea.Model, tea.Cmd) {
	prev := m.run.h
	m.run.stop()
	l := m.lesson()
	m.run.backend, _ = m.run.pick(l)
	m.scene.sc, m.run.h, m.run.paused, m.run.held = newScene(nil), nil, false, nil
	m.run.summaries, m.run.tables, m.status.flash = nil, nil, ""
	m.log.reset()
	if m.run.backend == lab.Rabbit && m.run.broker == "" {
		return m, m.run.seek(m.cfg.Broker, m.cur)
	}
	var explicit []Node
	if m.cfg.Topology != nil {
		explicit = m.cfg.Topology(l)
	}
	m.run.gen++
	m.run.speed = m.run.nextSpeed
	m.scene = newStage(explicit, m.st)
	m.run.state, m.run.runDone, m.run.runErr = running, false, nil
	met, storesCmd := m.panels.start(m.run.gen)
	opts := lesson.Options{Backend: m.run.backend, Speed: m.run.speed, Plan: m.cfg.Plan, Broker: m.run.broker,
		Stores: m.panels.stores}
	sinks := []lab.Sink{met}
	if m.cfg.Metrics != nil {
		sinks = append(sinks, m.cfg.Metrics)
	}
	h, runCmd := startRun(m.run.gen, l, opts, sinks...)
	if prev != nil && prev.cluster && !ended(prev) {
		h.after = prev.finished // it may be reviving a node: this run starts once it is done
		m.status.flash = waitingFlash
	}
	m.run.h, m.scene.pumping = h, true
	m.log.fit(m.width, m.height-m.chromeRows())
	return m, tea.Batch(runCmd, waitCmd(h), noteCmd(h), storesCmd)
}

// settle notes the end of the run once lesson.Run has returned and every
// event it sent is drawn, and shows the results.
func (m *Model) settle() {
	if !m.run.runDone || !m.scene.closed || m.run.state != running {
		return
	}
	m.run.state = finished
	if m.run.runErr != nil {
		m.run.state = failed
	}
	m.status.flash = "" // a passing note of the run's: the end and what next matter now
	m.showPane(resultsPane)
}

// showPane switches the pane to p, at its top (the log: at its tail).
func (m *Model) showPane(p pane) {
	m.log.pane = p
	m.fillPane()
	m.log.top()
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

// togglePause pauses or resumes the running lesson. Paused, the lesson's
// clock holds (in memory its timers wait too; a broker's TTLs do not) and
// the run's gate shuts, so the lesson stops at its next event; the model
// holds whatever a command had already brought instead of drawing it.
// Resuming applies the held events and lets the lesson go on.
func (m Model) togglePause() (tea.Model, tea.Cmd) {
	if m.run.state != running {
		return m, nil
	}
	m.run.paused = !m.run.paused
	var cmd tea.Cmd
	if m.run.h != nil {
		cmd = pauseCmd(m.run.h, m.run.paused)
	}
	if m.run.paused {
		return m, cmd
	}
	held := m.run.held
	m.run.held = nil
	m.scene.lastAt = time.Time{}
	m.scene.apply(held)
	m.record(held)
	return m, tea.Batch(cmd, m.scene.pump(m.run, len(held) > 0))
}

// onEvents applies a batch to the stage and the log, and has the stage
// decide what reads the channel next: a frame tick while anything
// moves, a blocking wait when all is still, nothing while paused or
// after the end.
func (m Model) onEvents(msg eventsMsg) (tea.Model, tea.Cmd) {
	if msg.gen != m.run.gen {
		return m, nil
	}
	m.scene.pumping = false
	m.scene.closed = m.scene.closed || msg.closed
	if m.run.paused {
		m.run.held = append(m.run.held, msg.events...)
		return m, nil
	}
	m.scene = m.scene.Update(msg, m.run.speed)
	m.record(msg.events)
	m.panels.read(m.run.metricsRun(m.lesson()))
	cmd := m.scene.pump(m.run, len(msg.events) > 0)
	m.settle()
	return m, cmd
}

// record takes events the stage has applied into the rest of the view:
// the log, the summaries for the results; the first event ends the wait
// for a cancelled cluster run.
func (m *Model) record(evs []lab.Event) {
	if len(evs) == 0 {
		return
	}
	if m.status.flash == waitingFlash {
		m.status.flash = ""
	}
	for _, e := range evs {
		if e.Kind == lab.Summary {
			m.run.summaries = append(m.run.summaries, e)
		}
	}
	m.log.add(evs, m.width)
	m.fillPane()
}

// fillPane puts the log, the results or the notice into the pane, sized
// to what the rest of the lesson view leaves.
func (m *Model) fillPane() {
	page := ""
	switch m.log.pane {
	case resultsPane:
		fail := "" // the status line holds only its start
		if m.run.state == failed {
			fail = m.run.failText(nextStep(m.lessons, m.cur))
		}
		page = results(m.run.tables, m.run.summaries, fail, m.width)
	case noticePane:
		text := "Notice: " + m.lesson().NoticeFor(m.run.backend)
		if m.run.noBroker != "" && m.run.backend == lab.InMem {
			text += "\n\nIn memory because no RabbitMQ broker answered: " + m.run.noBroker
		}
		page = sanitize(strings.Join(render.Wrap(text, m.width, ""), "\n"))
	}
	m.log.fill(page, m.width, m.height-m.chromeRows())
}

// results is the closing tables, at width w: the run's failure, whole,
// if fail says one; the lesson's measurements (the point of Q03, Q05,
// Q06, Q11–Q13); then what happened to each task.
func results(tables []render.Table, summaries []lab.Event, fail string, w int) string {
	var b strings.Builder
	if fail != "" {
		b.WriteString(strings.Join(render.Wrap(fail, w, ""), "\n") + "\n\n")
	}
	layout := render.LayoutFor(w)
	for _, t := range tables {
		t.Fit(&b, layout)
		b.WriteString("\n")
	}
	render.WhatHappened(summaries).Fit(&b, layout)
	return sanitize(strings.TrimRight(b.String(), "\n"))
}

// switchBackend flips between in-memory and RabbitMQ where the lesson has
// both. RabbitMQ needs a broker: discovery runs in a command, and the
// in-memory run goes on until one answers.
func (m Model) switchBackend() (tea.Model, tea.Cmd) {
	l := m.lesson()
	if !l.Dual() {
		m.status.flash = fmt.Sprintf("%s runs on %s only", l.ID, l.Backends()[0])
		return m, nil
	}
	if m.run.backend == lab.Rabbit || m.run.state == noBroker {
		m.run.chosen = lab.InMem
		return m.start()
	}
	m.run.chosen = lab.Rabbit
	if m.run.broker != "" {
		return m.start()
	}
	if m.cfg.Broker == nil {
		m.run.chosen = lab.InMem
		m.status.flash = l.ID + " needs RabbitMQ for that, which is not available in this build"
		return m, nil
	}
	m.status.flash = "looking for a RabbitMQ broker…"
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
		m.run.broker, m.run.noBroker = msg.url, ""
		return m.start()
	}
	why := firstLine(msg.err.Error())
	if m.run.state != seeking { // the user pressed b during an in-memory run
		m.run.chosen = lab.InMem
		m.status.flash, m.run.noBroker = "no RabbitMQ broker, so this stays in memory · i: why", why
		m.fillPane()
		return m, nil
	}
	l := m.lesson()
	if _, explicit := m.run.pick(l); !explicit && l.InMem != nil {
		m.run.chosen = lab.InMem
		next, cmd := m.start()
		m = next.(Model)
		m.status.flash = fmt.Sprintf("no RabbitMQ broker, so %s runs its in-memory twin (start one, then b) · i: why", l.ID)
		m.run.noBroker = why
		m.fillPane()
		return m, cmd
	}
	m.run.state, m.run.brokerErr = noBroker, why
	return m, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// noticeRows is how many lines the notice may take at height h.
func noticeRows(h int) int {
	if h >= 24 {
		return 3
	}
	return 1
}

// chromeRows counts the lesson view's lines besides the log pane.
func (m Model) chromeRows() int {
	if m.log.pane != logPane {
		return 5 + m.panels.rows() // header, status line, stats, pane rule, help: the pane takes the rest
	}
	l, w := m.lesson(), m.width
	stage := m.scene.height(w, m.run.idle(l, nextStep(m.lessons, m.cur), w, m.st))
	// header, notice, status line, stage, stats, log rule, help
	return 1 + len(noticeLines(l.NoticeFor(m.run.backend), w, noticeRows(m.height))) + 1 + stage + 1 + 1 + 1 + m.panels.rows()
}

// View draws the menu or the lesson view.
func (m Model) View() string {
	if m.screen == menuScreen {
		return m.menu.View()
	}
	w, l, next := m.width, m.lesson(), nextStep(m.lessons, m.cur)
	out := []string{m.status.header(m.run, l, w)}
	if m.log.pane == logPane { // the results and the notice take the stage's rows
		out = append(out, noticeLines(l.NoticeFor(m.run.backend), w, noticeRows(m.height))...)
	}
	out = append(out, m.status.View(m.run, l, next, w))
	if m.log.pane == logPane {
		out = append(out, m.scene.View(w, m.run.idle(l, next, w, m.st)))
	}
	out = append(out, m.scene.statsLine(w))
	if p := m.panels.View(w); p != "" {
		out = append(out, p)
	}
	out = append(out, m.log.View())
	out = append(out, clip(m.help.ShortHelpView(m.keys.helpFor(m.run.state, w, m.keys.extra(l.Actions, m.run.backend))), w))
	return sanitize(strings.Join(out, "\n"))
}

package tui

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/run"
)

// Pumping events: how the model gets them without ever blocking Update.
const (
	frameEvery = time.Second / 30       // animation frame rate while anything moves
	countEvery = 100 * time.Millisecond // slower frames when only countdowns tick
	eventBuf   = 4096                   // the sink blocks beyond this, and its events wait in viewBuf
	viewBuf    = 1 << 16                // events the view may fall behind by before it misses some (lab.Bounded)
	maxBatch   = 4096                   // events applied per frame at most
	quitWait   = 3 * time.Second        // how long Run waits for a cancelled lesson
	// clusterWait is how long a cancelled cluster lesson may take to revive
	// the node it stopped and delete its queues (Q21's bound is 3 min for
	// the node and 30 s for the queues); Run and a restart wait for it.
	clusterWait = 4 * time.Minute
)

// runHandle is one run of a lesson: the channel its events arrive on, the
// cancel of its context, and a channel closed when lesson.Run returned.
type runHandle struct {
	gen      int
	events   chan lab.Event
	cancel   context.CancelFunc
	finished chan struct{}
	gate     *gate
	pause    *lab.Pause      // holds the run's lesson time while the user pauses
	act      chan lesson.Act // the lesson's own keys (Lesson.Actions); nil for a lesson without
	cluster  bool            // the lesson stops nodes of the cluster (Lesson.Cluster)
	faults   *lab.Faults     // the run's own connections and held channels (the fault keys)
	notes    chan string     // what the backend logs (a connection lost, a reconnect), for the view
	// after, when set before the run's command runs, is the finished
	// channel of a cancelled cluster run: the run waits for it (bounded by
	// clusterWait), since that run may still be reviving the node it
	// stopped, and a cluster with a node down is no cluster to start on.
	after <-chan struct{}
}

// gate holds the sink while the user has paused: the lesson then stops at
// its next event. Safe for concurrent use.
type gate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

// wait returns a channel that is closed while the gate is open.
func (g *gate) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// set opens (true) or shuts (false) the gate; repeating a state is a no-op.
func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		if !open {
			g.open = make(chan struct{})
		}
	default:
		if open {
			close(g.open)
		}
	}
}

// pauseCmd pauses (true) or resumes the run, from a command as all effects
// are: pausing holds the lesson clock, then shuts the gate; resuming
// releases the clock, then opens the gate.
func pauseCmd(h *runHandle, pause bool) tea.Cmd {
	return func() tea.Msg {
		if pause {
			h.pause.Hold()
		} else {
			h.pause.Release()
		}
		h.gate.set(!pause)
		return nil
	}
}

// chanSink forwards events into the program. It blocks while the user has
// paused and while the channel is full, and gives up once the run is
// cancelled; it runs behind a lab.Bounded, so blocking it holds up no
// worker (what does not fit is counted as missed).
type chanSink struct {
	ctx  context.Context
	ch   chan<- lab.Event
	gate *gate
}

// Emit hands e to the program, or drops it when the run was cancelled. It
// waits while the gate is shut (paused).
func (s chanSink) Emit(e lab.Event) {
	select {
	case <-s.gate.wait():
	case <-s.ctx.Done():
		return
	}
	select {
	case s.ch <- e:
	case <-s.ctx.Done():
	}
}

// Messages the commands send back to Update. gen ties each to its run, so
// messages of a run that was restarted are ignored.
type (
	// eventsMsg carries a batch of events; closed means the run's channel
	// is drained and closed.
	eventsMsg struct {
		gen    int
		events []lab.Event
		closed bool
		frame  bool      // it came from a frame tick (else from the idle wait)
		at     time.Time // when the tick fired
	}
	// runDoneMsg says lesson.Run returned, with the measured tables the
	// lesson reported.
	runDoneMsg struct {
		gen    int
		err    error
		tables []render.Table
		missed int // events the view missed by falling behind
	}
	// storesMsg is a read of the run's status stores (the store panel).
	storesMsg struct {
		gen    int
		states []lesson.StoreState
		final  bool // read after the run returned: every store closed
	}
	// actMsg is what the lesson made of one of its own keys.
	actMsg struct {
		gen   int
		key   string
		line  string
		fault bool // a fault key's (faultCmd): it goes to the log too
	}
	// brokerMsg is the answer of broker discovery.
	brokerMsg struct {
		lesson int
		url    string
		err    error
	}
)

// startRun launches lesson l on backend b, its events to the view and to
// the extra sinks (the metrics); the returned command runs the lesson to its end and closes the
// events channel behind it.
func startRun(gen int, l lesson.Lesson, opts lesson.Options, extra ...lab.Sink) (*runHandle, tea.Cmd) {
	ctx, cancel := context.WithCancel(context.Background())
	h := &runHandle{gen: gen, events: make(chan lab.Event, eventBuf), cancel: cancel, finished: make(chan struct{}),
		gate: newGate(), pause: &lab.Pause{}, cluster: l.Cluster, faults: &lab.Faults{},
		notes: make(chan string, noteBuf)}
	ctx = lab.WithFaults(ctx, h.faults) // only what this run dials under ctx can be broken
	opts.Pause = h.pause
	opts.Logger = slog.New(noteHandler{notes: h.notes})
	if len(l.Actions) > 0 {
		h.act = make(chan lesson.Act)
		opts.Act = h.act
	}
	run := func() tea.Msg {
		defer close(h.finished)
		if h.after != nil { // not cut short by ctx: a quit then waits for the node too (Run)
			select {
			case <-h.after:
			case <-time.After(clusterWait):
			}
		}
		// Bounded: a view that falls behind misses events (counted, shown)
		// rather than holding up the lesson's workers.
		view := lab.NewBounded(chanSink{ctx: ctx, ch: h.events, gate: h.gate}, viewBuf)
		res, err := startLesson(ctx, l, opts, append([]lab.Sink{view}, extra...)...)
		close(h.events) // Run has finished its stream and its sinks: nothing emits after this
		return runDoneMsg{gen: gen, err: err, tables: res.Tables, missed: res.Missed}
	}
	return h, run
}

// startLesson runs l through the run API (checked, named), as every front
// end does; the broker URL is the one the TUI's discovery found.
func startLesson(ctx context.Context, l lesson.Lesson, opts lesson.Options, sinks ...lab.Sink) (lesson.Result, error) {
	ready, err := run.Prepare(ctx, run.Request{Lesson: l, Options: opts})
	if err != nil {
		return lesson.Result{}, err
	}
	return ready.Start(ctx, sinks...)
}

// noteBuf is how many of the backend's log lines wait for the view; more
// are dropped (the log is a commentary: the events are the record).
const noteBuf = 64

// noteHandler hands each record the backend logs at Info or above to the
// view as one line ("rabbit: consumer reconnected · actor Worker"),
// never blocking the backend.
type noteHandler struct {
	notes chan<- string
	attrs []slog.Attr
}

// Enabled passes Info and above.
func (h noteHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

// Handle formats r as one line and offers it to the view.
func (h noteHandler) Handle(_ context.Context, r slog.Record) error {
	parts := []string{r.Message}
	add := func(a slog.Attr) bool {
		if !a.Equal(slog.Attr{}) {
			parts = append(parts, a.Key+" "+a.Value.String())
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	select {
	case h.notes <- strings.Join(parts, " · "):
	default:
	}
	return nil
}

// WithAttrs adds attrs to every line.
func (h noteHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(slices.Clip(h.attrs), attrs...)
	return h
}

// WithGroup is h: the lines are flat.
func (h noteHandler) WithGroup(string) slog.Handler { return h }

// noteMsg is one line the run's backend logged.
type noteMsg struct {
	gen  int
	line string
}

// noteCmd waits for the run's next log line; it re-arms from Update and
// ends with the run.
func noteCmd(h *runHandle) tea.Cmd {
	return func() tea.Msg {
		select {
		case line := <-h.notes:
			return noteMsg{gen: h.gen, line: line}
		case <-h.finished:
			select {
			case line := <-h.notes:
				return noteMsg{gen: h.gen, line: line}
			default:
				return nil
			}
		}
	}
}

// faultWait bounds how long the close-a-channel key waits for a worker to
// hold a delivery.
const faultWait = 3 * time.Second

// faultCmd breaks what key k says, on run h's own connections only, and
// brings back what it did.
func faultCmd(h *runHandle, k string) tea.Cmd {
	return func() tea.Msg {
		switch k {
		case cutKey:
			n := h.faults.CutConnections()
			if n == 0 {
				return actMsg{gen: h.gen, key: k, fault: true, line: "the run has no connection open right now"}
			}
			return actMsg{gen: h.gen, key: k, fault: true, line: fmt.Sprintf("cut %s of this run (TCP reset): "+
				"watch for redelivered and the reconnect", render.Count(n, "connection"))}
		default:
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-h.finished:
					cancel()
				case <-ctx.Done():
				}
			}()
			what, ok := h.faults.CloseHolding(ctx, faultWait)
			if !ok {
				return actMsg{gen: h.gen, key: k, fault: true, line: "no worker held a delivery within 3 s: press it again while one works"}
			}
			return actMsg{gen: h.gen, key: k, fault: true, line: "closed " + what + ": the broker requeues it"}
		}
	}
}

// actWait bounds each of actCmd's two waits: for the lesson to take the
// key, and for its answer.
const actWait = 2 * time.Second

// actCmd hands key to the run (Options.Act) and brings back the lesson's
// answer; a lesson busy elsewhere (stopping a node, or past the part that
// takes keys and not reading them) is reported, never waited on for long.
func actCmd(h *runHandle, key string) tea.Cmd {
	return func() tea.Msg {
		answer := make(chan string, 1)
		select {
		case h.act <- lesson.Act{Key: key, Answer: answer}:
		case <-h.finished:
			return actMsg{gen: h.gen, key: key, line: "the run has ended"}
		case <-time.After(actWait):
			return actMsg{gen: h.gen, key: key, line: "the lesson is busy and did not take it: press it again"}
		}
		select {
		case line := <-answer:
			return actMsg{gen: h.gen, key: key, line: line}
		case <-time.After(actWait):
			return actMsg{gen: h.gen, key: key, line: "taken"}
		}
	}
}

// waitCmd blocks until the run has an event (no ticking while idle), then
// takes whatever else is already there.
func waitCmd(h *runHandle) tea.Cmd {
	return func() tea.Msg {
		e, ok := <-h.events
		if !ok {
			return eventsMsg{gen: h.gen, closed: true}
		}
		msg := drain(h, []lab.Event{e})
		return msg
	}
}

// frameCmd waits one frame, then takes the events that arrived meanwhile.
func frameCmd(h *runHandle, every time.Duration) tea.Cmd {
	return tea.Tick(every, func(at time.Time) tea.Msg {
		msg := drain(h, nil)
		msg.frame, msg.at = true, at
		return msg
	})
}

// drain reads the events already queued, without blocking, up to maxBatch.
func drain(h *runHandle, got []lab.Event) eventsMsg {
	for len(got) < maxBatch {
		select {
		case e, ok := <-h.events:
			if !ok {
				return eventsMsg{gen: h.gen, events: got, closed: true}
			}
			got = append(got, e)
		default:
			return eventsMsg{gen: h.gen, events: got}
		}
	}
	return eventsMsg{gen: h.gen, events: got}
}

// storesEvery is how often the store panel reads the run's stores: a
// COUNT … GROUP BY status, cheap, off the view's goroutine.
const storesEvery = 250 * time.Millisecond

// storesCmd reads stores after the delay given, bounded in time.
func storesCmd(gen int, stores *lesson.Stores, after time.Duration) tea.Cmd {
	return tea.Tick(after, func(time.Time) tea.Msg { return readStores(gen, stores, false) })
}

// finalStoresCmd reads stores once the run has returned.
func finalStoresCmd(gen int, stores *lesson.Stores) tea.Cmd {
	return func() tea.Msg { return readStores(gen, stores, true) }
}

func readStores(gen int, stores *lesson.Stores, final bool) storesMsg {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return storesMsg{gen: gen, states: stores.Read(ctx), final: final}
}

// brokerCmd asks cfg.Broker for a broker, bounded in time.
func brokerCmd(find func(context.Context) (string, error), lesson int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		url, err := find(ctx)
		return brokerMsg{lesson: lesson, url: url, err: err}
	}
}

// Run shows the TUI on the terminal until the user quits or ctx ends, then
// cancels the lesson that is running and waits (briefly) for it to stop.
func Run(ctx context.Context, cfg Config) error {
	m, err := New(cfg)
	if err != nil {
		return err
	}
	if !cfg.Color {
		lipgloss.SetColorProfile(termenv.Ascii) // the menu and help use the default renderer
	}
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx))
	final, err := p.Run()
	if fm, ok := final.(Model); ok {
		fm.run.stop()
		if !fm.run.awaitStop(quitWait) && fm.run.h.cluster {
			fmt.Fprintf(os.Stderr, "qlab: lesson %d is reviving the node it stopped and deleting its "+
				"queues (up to %.0f min)…\n", fm.lesson().Number(), clusterWait.Minutes())
			fm.run.awaitStop(clusterWait)
		}
	}
	if err != nil && ctx.Err() != nil {
		return nil // interrupted from outside: a clean exit
	}
	return err
}

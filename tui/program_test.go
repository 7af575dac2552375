package tui

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSmokeRunToDLQAndQuit runs the fake lesson in a real bubbletea
// program, waits until its poison task sits in the DLQ and the results
// show, and quits.
func TestSmokeRunToDLQAndQuit(t *testing.T) {
	m, err := New(Config{Lessons: []lesson.Lesson{fakeDLQ}, Start: 98, Speed: 4})
	require.NoError(t, err)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	teatest.WaitFor(t, tm.Output(), func(out []byte) bool {
		return bytes.Contains(out, []byte("dead 1 ·")) && bytes.Contains(out, []byte("What happened"))
	}, teatest.WithDuration(20*time.Second))
	tm.Type("q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	final := tm.FinalModel(t).(Model)
	assert.Equal(t, 1, final.scene.sc.count[lab.FateDead])
	assert.Equal(t, []string{"C"}, final.scene.sc.alerts)
	final.run.awaitStop(quitWait)
	select {
	case <-final.run.h.finished:
	default:
		t.Fatal("quitting did not end the lesson run")
	}
}

// stressLesson pushes n tasks through one queue; every tenth is poison and
// goes to the DLQ.
func stressLesson(n int) lesson.Lesson {
	return lesson.Lesson{ID: "Q97", Title: "Stress", Notice: "Many tasks.", InMem: func(ctx context.Context, env *lesson.Env) error {
		sys := inmem.New(ctx, env.Stream, env.Plan)
		work := sys.Queue("work", n+1)
		dlq := sys.Queue("dlq", n+1)
		for _, id := range env.Plan.Tasks {
			work.Enqueue("Producer", id)
		}
		sys.Worker("Worker", work, func(t *inmem.Task) {
			if sys.Attempt("Worker", work, t) != nil {
				work.DeadLetter("Worker", t, dlq, "poison")
			}
		})
		sys.Worker("DLQ-Worker", dlq, func(*inmem.Task) {}) // parked: someone reads the DLQ later
		return sys.Wait(ctx)
	}}
}

func stressPlan(n int) *lab.Plan {
	p := lab.Plan{Work: time.Millisecond}
	for i := range n {
		id := fmt.Sprintf("T%05d", i)
		p.Tasks = append(p.Tasks, id)
		if i%10 == 9 {
			p.Poison = append(p.Poison, id)
		}
	}
	return &p
}

// drive runs the model like bubbletea does (commands in goroutines,
// messages into Update one at a time) until done says stop.
func drive(t *testing.T, m Model, done func(Model) bool) (Model, int) {
	t.Helper()
	msgs := make(chan tea.Msg, 16)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c != nil {
			go func() { msgs <- c() }()
		}
	}
	run(m.Init())
	n := 0
	for !done(m) {
		msg := <-msgs
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				run(c)
			}
			continue
		}
		next, cmd := m.Update(msg)
		m = next.(Model)
		_ = m.View()
		n++
		run(cmd)
	}
	return m, n
}

// TestStress10kKeepsUp runs 10,000 tasks as fast as the lesson can go and
// checks the view took them all in coalesced batches with bounded memory.
func TestStress10kKeepsUp(t *testing.T) {
	t.Parallel() // 10,000 tasks in real time: beside the other runs
	const n = 10_000
	m, err := New(Config{Lessons: []lesson.Lesson{stressLesson(n)}, Start: 97, Speed: 1000, Plan: stressPlan(n)})
	require.NoError(t, err)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m, updates := drive(t, m, func(m Model) bool { return m.run.runDone && m.scene.closed && !m.scene.pumping })
	t.Cleanup(func() { m.run.stop() })

	assert.Equal(t, n-n/10, m.scene.sc.count[lab.FateDone])
	assert.Equal(t, n/10, m.scene.sc.count[lab.FateDead])
	assert.Equal(t, 0, m.scene.sc.pending())
	assert.LessOrEqual(t, len(m.log.lines), logKeep, "the log keeps a bounded tail")
	events := n*4 + n/10 // enqueued, started, succeeded|failed, summary; + dead_lettered
	assert.Less(t, updates*10, events, "events are coalesced: %d updates for %d events", updates, events)
	// At 80 columns the fates still at zero give way to the clock (its
	// minutes have as many digits as a loaded machine makes them).
	assert.Regexp(t, `(?m)^done 9000 · dead 1000 · attempts 10000 · \d+:\d\d\.\d{3}`, m.View())
}

// bigModel is a view holding 10,000 tasks: most done, some waiting with a
// countdown, some dead, some in flight, and a breaker that tripped.
func bigModel(w, h int) Model {
	m := testModel(fakeDLQ, w, h)
	var evs []lab.Event
	for i := range 10_000 {
		evs = append(evs, ev(0, lab.Enqueued, fmt.Sprintf("T%05d", i), "main", ""))
	}
	evs = append(evs, lab.Event{Kind: lab.Breaker, Note: "closed"})
	for i := range 10_000 {
		id := fmt.Sprintf("T%05d", i)
		switch {
		case i < 6000:
			evs = append(evs, ev(10, lab.Started, id, "main", ""), ev(20, lab.Succeeded, id, "main", ""))
		case i < 7000:
			evs = append(evs, ev(10, lab.Started, id, "main", ""), ev(20, lab.Failed, id, "main", ""),
				ev(20, lab.DeadLettered, id, "main", "dlq"))
		case i < 8000:
			s := ev(20, lab.Scheduled, id, "main", "retry")
			s.DelayMs = 1000
			evs = append(evs, s)
		}
	}
	m = feed(m, evs...)
	m = frames(m, moveFrames+1)
	var late []lab.Event
	for i := 8000; i < 8300; i++ {
		late = append(late, ev(30, lab.Moved, fmt.Sprintf("T%05d", i), "main", "retry"))
	}
	late = append(late, lab.Event{Kind: lab.Breaker, Note: "open"}, ev(40, lab.Rejected, "T09999", "main", ""))
	m = feed(m, late...)
	return frames(m, 3)
}

func TestBigModelView(t *testing.T) {
	m := bigModel(80, 24)
	frame := m.View()
	assert.Contains(t, frame, "done 6000 · dead 1000 · pending 3000 · attempts 7000 · 00:00.")
	assert.Contains(t, frame, "breaker ○ open")
	assert.Contains(t, frame, "←T08", "tokens in flight are drawn")
	assert.Regexp(t, `(?m)←T08\S* +\+\d+$`, frame, "those that do not fit the lane are counted")
}

func BenchmarkView10k(b *testing.B) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			m := bigModel(size[0], size[1])
			b.ResetTimer()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

func TestGateHoldsTheSinkWhileShut(t *testing.T) {
	g := newGate()
	ch := make(chan lab.Event, 1)
	ctx, cancel := context.WithCancel(context.Background())
	sink := chanSink{ctx: ctx, ch: ch, gate: g}
	sink.Emit(lab.Event{Task: "A"})
	assert.Equal(t, "A", (<-ch).Task, "an open gate lets events through")

	g.set(false)
	g.set(false) // repeating a state is a no-op
	sent := make(chan struct{})
	go func() { sink.Emit(lab.Event{Task: "B"}); close(sent) }()
	select {
	case <-ch:
		t.Fatal("a shut gate let an event through")
	default:
	}
	g.set(true)
	<-sent
	assert.Equal(t, "B", (<-ch).Task)

	g.set(false)
	cancel()
	sink.Emit(lab.Event{Task: "C"}) // must not block: the run is over
	assert.Empty(t, ch)
}

// TestIdleRunWaitsInsteadOfTicking: once nothing moves, the model reads
// the channel with a blocking wait (no frames while idle), and once the
// run is over it issues no command at all.
func TestIdleRunWaitsInsteadOfTicking(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	h := &runHandle{gen: m.run.gen, events: make(chan lab.Event, 4), gate: newGate(), cancel: func() {}}
	m.run.h = h
	m = feed(m, chainStart()...)
	m.scene.pumping = false
	m = frames(m, moveFrames+1)
	m = step1(m, eventsMsg{gen: m.run.gen, frame: true, at: epoch.Add(time.Hour)}) // the countdown is over: C moves on
	for i := range moveFrames {
		m = step1(m, eventsMsg{gen: m.run.gen, frame: true, at: epoch.Add(time.Hour + time.Duration(i+1)*frameEvery)})
	}
	next, cmd := m.Update(eventsMsg{gen: m.run.gen, frame: true, at: epoch.Add(2 * time.Hour)})
	m = next.(Model)
	require.NotNil(t, cmd)
	got := make(chan tea.Msg, 1)
	go func() { got <- cmd() }()
	h.events <- ev(5000, lab.Started, "C", "retry", "")
	msg := (<-got).(eventsMsg)
	assert.False(t, msg.frame, "idle: a blocking wait, not a frame tick")
	assert.Len(t, msg.events, 1)

	close(h.events)
	m.scene.closed = true
	m.scene.sc = newScene(nil)
	_, cmd = m.Update(eventsMsg{gen: m.run.gen, closed: true})
	assert.Nil(t, cmd, "finished and still: nothing more to read, no ticks")
}

// BenchmarkApplyBatch measures Update for one full frame's batch
// (maxBatch events) on a view already holding 10,000 tasks.
func BenchmarkApplyBatch(b *testing.B) {
	base := bigModel(80, 24)
	batch := make([]lab.Event, 0, maxBatch)
	for i := range maxBatch / 2 {
		id := fmt.Sprintf("T%05d", 8300+i%1700)
		batch = append(batch, ev(50, lab.Started, id, "main", ""), ev(60, lab.Failed, id, "main", ""))
	}
	for b.Loop() {
		b.StopTimer()
		m := base
		m.scene.sc = bigModel(80, 24).scene.sc
		b.StartTimer()
		m = feed(m, batch...)
	}
}

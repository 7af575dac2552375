package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/q10"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// driver runs a model as bubbletea does, commands in goroutines and
// messages into Update one at a time, across several waits and key presses.
type driver struct {
	t    *testing.T
	m    Model
	msgs chan tea.Msg
}

func newDriver(t *testing.T, m Model) *driver {
	d := &driver{t: t, m: m, msgs: make(chan tea.Msg, 64)}
	d.run(m.Init())
	t.Cleanup(func() { d.m.run.stop(); d.m.run.awaitStop(30 * time.Second) })
	return d
}

func (d *driver) run(c tea.Cmd) {
	if c != nil {
		go func() { d.msgs <- c() }()
	}
}

// until applies messages until done holds, or fails after bound.
func (d *driver) until(what string, bound time.Duration, done func(Model) bool) {
	d.t.Helper()
	deadline := time.After(bound)
	for !done(d.m) {
		select {
		case msg := <-d.msgs:
			if batch, ok := msg.(tea.BatchMsg); ok {
				for _, c := range batch {
					d.run(c)
				}
				continue
			}
			next, cmd := d.m.Update(msg)
			d.m = next.(Model)
			_ = d.m.View()
			d.run(cmd)
		case <-deadline:
			d.t.Fatalf("%s: not within %v; status line %q", what, bound, d.m.status.flash)
		}
	}
}

// press hands the model key k, as a person typing it.
func (d *driver) press(k string) {
	next, cmd := d.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
	d.m = next.(Model)
	d.run(cmd)
}

// logged counts the log's entries of kind k whose text has sub.
func logged(m Model, k lab.Kind, sub string) int {
	n := 0
	for _, e := range m.log.logged {
		if e.Kind == k && strings.Contains(e.Note, sub) {
			n++
		}
	}
	return n
}

// The fault keys on a real broker run of Q10, at 80×24: c closes the
// channel of a worker holding a delivery and the log shows the broker's
// redelivery and the consumer's reconnect; x cuts the run's connections
// and the log shows the reconnects. The run still accounts for every
// task, and the help line lists both keys.
func TestFaultKeysOnABrokerRun(t *testing.T) {
	if testing.Short() {
		t.Skip("breaks a broker run's channels and connections: make quick runs no faults")
	}
	url := rabbittest.NeedBroker(t)
	m, err := New(Config{Lessons: []lesson.Lesson{q10.Lesson}, Start: 10, Backend: lab.Rabbit, Speed: 0.5,
		Broker: func(context.Context) (string, error) { return url, nil }})
	require.NoError(t, err)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	d := newDriver(t, m)
	d.until("the run starts", 30*time.Second, func(m Model) bool { return m.run.state == running && len(m.log.logged) > 0 })
	assert.Contains(t, d.m.View(), "x cut conns • c close chan", "the help line lists the fault keys")

	// c first: at the start every worker has work, so one soon holds a
	// delivery; a press that finds none within its bound is pressed again.
	var held string
	for held == "" {
		d.press(holdKey)
		d.until("c answers", 30*time.Second, func(m Model) bool {
			return strings.HasPrefix(m.status.flash, "c: closed") || strings.HasPrefix(m.status.flash, "c: no worker")
		})
		if strings.HasPrefix(d.m.status.flash, "c: closed") {
			held = d.m.status.flash
		}
		require.Equal(t, running, d.m.run.state, "the run ended before a worker held a delivery")
	}
	d.until("the broker redelivers", 30*time.Second, func(m Model) bool { return logged(m, lab.Redelivered, "") > 0 })
	d.until("the consumer reconnects", 30*time.Second, func(m Model) bool { return logged(m, noteKind, "channel closed") > 0 })

	require.Equal(t, running, d.m.run.state, "the run ended before x")
	d.press(cutKey)
	d.until("x cuts the connections", 30*time.Second, func(m Model) bool { return strings.HasPrefix(m.status.flash, "x: cut ") })
	cut := d.m.status.flash
	d.until("the connections come back", 30*time.Second, func(m Model) bool { return logged(m, noteKind, "reconnected") > 0 })
	t.Log(held, "\n", cut)

	d.until("the run ends", 2*time.Minute, func(m Model) bool { return m.run.state == finished || m.run.state == failed })
	require.Equal(t, finished, d.m.run.state, "the run failed: %v", d.m.run.runErr)
	assert.Equal(t, 0, d.m.scene.sc.pending(), "every task accounted for")
	assert.Contains(t, held, "holding task ")
	assert.Equal(t, 1, logged(d.m, noteKind, "c: closed"), "what c broke is in the log, whole")
	assert.Equal(t, 1, logged(d.m, noteKind, "x: cut"))
	assert.Regexp(t, `^x: cut \d+ connections? of this run`, cut)
}

// On an in-memory run the fault keys say why they do nothing, and the
// help line leaves them out.
func TestFaultKeysInMemory(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m.run.backend = lab.InMem
	m, cmd := press(m, cutKey)
	assert.Nil(t, cmd)
	assert.Contains(t, m.status.flash, "runs in memory")
	assert.NotContains(t, m.View(), "cut conns")
}

// A line the backend logs shows in the status line and in the log.
func TestBackendNotesShow(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m.run.h = &runHandle{gen: m.run.gen, notes: make(chan string, 1), finished: make(chan struct{})}
	m = step1(m, noteMsg{gen: m.run.gen, line: "q21: n1 stopped (stop_app took 3.1 s); n2 leads birthday now"})
	assert.Equal(t, "q21: n1 stopped (stop_app took 3.1 s); n2 leads birthday now", m.status.flash)
	assert.Contains(t, m.View(), "n2 leads birthday now")
	assert.Equal(t, 1, logged(m, noteKind, "n2 leads"))
	m = step1(m, noteMsg{gen: m.run.gen + 1, line: "another run's"})
	assert.Equal(t, 0, logged(m, noteKind, "another run's"), "an old run's note is dropped")
}

// Once the run ends, the status line says so and what is next, not the
// run's last passing note.
func TestFinishClearsTheLastNote(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m.run.h = &runHandle{gen: m.run.gen, notes: make(chan string, 1), finished: make(chan struct{})}
	m = step1(m, noteMsg{gen: m.run.gen, line: "rabbit: consumer reconnected · actor W"})
	m.run.runDone, m.scene.closed = true, true
	m.settle()
	assert.Equal(t, finished, m.run.state)
	assert.Contains(t, statusLine(m, 80), "finished")
}

// A passing message too long for the status line is cut at a space.
func TestStatusLineCutsAtASpace(t *testing.T) {
	line := "c: closed Worker-1's channel on n2, holding M22 unacked: the broker requeues it again"
	got := clipWords(line, 80)
	assert.Equal(t, "c: closed Worker-1's channel on n2, holding M22 unacked: the broker requeues…", got)
	assert.LessOrEqual(t, len([]rune(got)), 80)
	assert.Equal(t, "short", clipWords("short", 80))
}

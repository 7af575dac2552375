package tui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// golden compares a frame with testdata/golden/tui_<name>.txt, through
// the lab's one golden helper (and its -update flag).
func golden(t *testing.T, name, frame string) {
	t.Helper()
	labtest.Golden(t, filepath.Join("..", "testdata", "golden", "tui_"+name+".txt"), frame)
}

func TestGoldenMoveMidFlight(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m = feed(m, chainStart()...)
	m = frames(m, 4)
	frame := m.View()
	golden(t, "move_midflight", frame)
	assert.Contains(t, frame, "┈C→", "C travels main → retry")
	assert.NotContains(t, frame, "C 1", "no countdown while C is still on its way")
}

func TestMoveAnimatesOverFramesThenLands(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m = feed(m, chainStart()...)
	var xs []int
	for range moveFrames - 1 {
		m = frames(m, 1)
		xs = append(xs, strings.Index(laneOf(t, m.View()), "C→"))
	}
	assert.True(t, slices.IsSorted(xs), "the token only moves forward: %v", xs)
	assert.Greater(t, xs[len(xs)-1], xs[0]+4, "and covers the way between the boxes: %v", xs)
	assert.Greater(t, len(slices.Compact(slices.Clone(xs))), 4, "in several steps, not a jump: %v", xs)
	m = frames(m, 1)
	assert.NotContains(t, m.View(), "C→", "the move is over")
	assert.Contains(t, m.View(), "│ C 0.9s", "C waits in retry with a countdown")
}

// laneOf returns the line under the boxes.
func laneOf(t *testing.T, frame string) string {
	t.Helper()
	lines := strings.Split(frame, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "╰") {
			return lines[i+1]
		}
	}
	t.Fatalf("no boxes in frame:\n%s", frame)
	return ""
}

func TestGoldenChainDLQ(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m := testModel(fakeDLQ, size[0], size[1])
			m = feed(m, chainStart()...)
			m = frames(m, moveFrames+1)
			m = feed(m, chainEnd()...)
			m = frames(m, moveFrames+1)
			frame := m.View()
			golden(t, fmt.Sprintf("chain_dlq_%dx%d", size[0], size[1]), frame)
			assert.Contains(t, frame, "1 dead")
			assert.Contains(t, frame, "done 2 · dead 1 · dropped 0 · lost 0 · pending 0 · attempts 4")
			assert.Equal(t, size[1], strings.Count(frame, "\n")+1, "the frame fills the screen exactly")
		})
	}
}

// breakerEvents trips a breaker: two failures open it, a call is rejected,
// then it goes half-open and closes again.
func breakerEvents() [][]lab.Event {
	br := func(ms int64, state string) lab.Event {
		return lab.Event{TMs: ms, Kind: lab.Breaker, Actor: "breaker", Note: state}
	}
	return [][]lab.Event{
		{br(0, "closed"), ev(0, lab.Enqueued, "A", "calls", ""), ev(0, lab.Enqueued, "B", "calls", ""),
			ev(0, lab.Enqueued, "C", "calls", ""), ev(0, lab.Started, "A", "calls", ""), ev(100, lab.Failed, "A", "calls", "")},
		{ev(100, lab.Started, "B", "calls", ""), ev(200, lab.Failed, "B", "calls", ""), br(200, "open"),
			ev(200, lab.Rejected, "C", "calls", "")},
		{br(10200, "half_open")},
		{ev(10200, lab.Started, "C", "calls", ""), ev(10300, lab.Succeeded, "C", "calls", ""), br(10300, "closed")},
	}
}

func TestGoldenBreakerLight(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	want := []struct{ name, light string }{
		{"closed", "breaker ● closed  1 of 1 calls failed · rejected 0"},
		{"open", "breaker ○ open  tripped by 2 failed of 2 calls · rejected 1 (latest C)"},
		{"half_open", "breaker ◐ half_open  trial calls: 0 failed of 0 · rejected 1"},
		{"closed_again", "breaker ● closed  0 of 0 calls failed · rejected 1"},
	}
	for i, batch := range breakerEvents() {
		m = feed(m, batch...)
		m = frames(m, moveFrames+1)
		frame := m.View()
		golden(t, "breaker_"+want[i].name, frame)
		assert.Contains(t, frame, want[i].light)
		state := strings.Fields(want[i].light)[2]
		assert.Contains(t, frame, "Circuit breaker "+state, "the light and the log say the state in one word")
	}
}

func TestNoColorFramesHaveNoEscapes(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m = feed(m, chainStart()...)
	assert.NotContains(t, m.View(), "\x1b[")

	c, err := New(Config{Lessons: m.lessons, Start: 98, Color: true})
	require.NoError(t, err)
	c = step1(c, tea.WindowSizeMsg{Width: 80, Height: 24})
	c = feed(c, chainStart()...)
	assert.Contains(t, c.View(), "\x1b[", "with colour on, the view is painted")
}

func TestResizeRedrawsToTheNewSize(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m = feed(m, chainStart()...)
	for _, size := range [][2]int{{160, 48}, {100, 30}, {80, 24}} {
		m = step1(m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		frame := m.View()
		lines := strings.Split(frame, "\n")
		assert.Len(t, lines, size[1])
		for _, l := range lines {
			assert.LessOrEqual(t, len([]rune(l)), size[0]+2, "line too wide at %v: %q", size, l)
		}
	}
}

func TestPauseHoldsEventsUntilResume(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m = feed(m, chainStart()[:3]...)
	m = step1(m, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	require.True(t, m.run.paused)
	m = feed(m, chainStart()[3:]...)
	assert.Contains(t, m.View(), "paused")
	assert.Equal(t, 0, m.scene.sc.attempts, "paused: nothing applied")
	m = step1(m, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	assert.Equal(t, 3, m.scene.sc.attempts, "resumed: the held events are applied")
}

func TestSpeedKeysStepAndApplyOnRestart(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m = step1(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'+'}})
	assert.Equal(t, 0.25, m.run.speed)
	assert.Equal(t, 0.5, m.run.nextSpeed)
	assert.Contains(t, m.View(), "speed 0.25× (next run 0.5×)")
	m = step1(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'-'}})
	m = step1(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'-'}})
	assert.Equal(t, 0.1, m.run.nextSpeed)
}

// A lesson's own speed above the steps (Q14 starts at 100×): + never
// makes it slower, - comes down to the top step.
func TestSpeedKeysAboveTheSteps(t *testing.T) {
	assert.Equal(t, 100.0, step(100, +1))
	assert.Equal(t, 50.0, step(100, -1))
	assert.Equal(t, 10.0, step(50, -1))
}

func TestBackendSwitchWithoutBrokerSaysSo(t *testing.T) {
	both := fakeDLQ
	both.Rabbit = runFakeDLQ // stands in for a RabbitMQ variant: only its presence matters here
	m, err := New(Config{Lessons: []lessonsLesson{both}, Start: 98})
	require.NoError(t, err)
	m = step1(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'b'}})
	assert.Contains(t, m.View(), "needs RabbitMQ for that, which is not available in this build")
	assert.Equal(t, lab.InMem, m.run.backend)

	m, err = New(Config{Lessons: []lessonsLesson{both}, Start: 98, Broker: findNoBroker})
	require.NoError(t, err)
	next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'b'}})
	require.NotNil(t, cmd, "discovery runs in a command")
	m = step1(next.(Model), cmd())
	t.Cleanup(func() { m.run.stop() }) // its run command is never executed here
	assert.Contains(t, m.View(), "no RabbitMQ broker, so this stays in memory · i: why")
	assert.Equal(t, lab.InMem, m.run.backend)
	m = step1(m, keyMsg("i"))
	assert.Contains(t, m.View(), "no RabbitMQ broker answered: connection refused")

	only := fakeDLQ
	m, _ = New(Config{Lessons: []lessonsLesson{only}, Start: 98})
	m = step1(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'b'}})
	assert.Contains(t, m.View(), "Q98 runs on inmem only")
}

func TestNextAndPreviousLessonWrapAround(t *testing.T) {
	second := fakeDLQ
	second.ID, second.Title = "Q99", "Second fake"
	m, err := New(Config{Lessons: []lessonsLesson{fakeDLQ, second}, Start: 98})
	require.NoError(t, err)
	t.Cleanup(func() { m.run.stop() }) // its run command is never executed here
	for _, want := range []string{"Q99 · Second fake", "Q98 · Test chain"} {
		m.run.stop()
		m = step1(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'n'}})
		assert.Contains(t, m.View(), want)
	}
	m.run.stop()
	m = step1(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'p'}})
	assert.Contains(t, m.View(), "Q99 · Second fake")
	m = step1(m, tea.KeyMsg{Type: tea.KeyEsc})
	assert.Contains(t, m.View(), "pick a lesson")
}

func TestSharedPrefixLeavesTheDifferingPart(t *testing.T) {
	assert.Equal(t, "sequential.", sharedPrefix([]string{"sequential.queue", "sequential.retry.wait", "sequential.dlq"}))
	assert.Equal(t, "a.b.", sharedPrefix([]string{"a.b.c", "a.b.d.e"}))
	assert.Equal(t, "", sharedPrefix([]string{"email_queue", "email_queue_wait"}), "only dotted prefixes")
	assert.Equal(t, "", sharedPrefix([]string{"mail.queue", "deadLetterQueue"}), "not shared by all")
	assert.Equal(t, "", sharedPrefix([]string{"sequential.queue"}), "one box keeps its name")
}

// brokerLesson is the fake chain with a RabbitMQ variant (its runner
// stands in: only its presence matters) and RabbitMQ as its default.
func brokerLesson(inmem bool) lessonsLesson {
	l := fakeDLQ
	l.Rabbit, l.Default = runFakeDLQ, lab.Rabbit
	if !inmem {
		l.InMem = nil
	}
	return l
}

// discover runs the model's discovery command and hands back its answer.
func discover(t *testing.T, m Model) Model {
	t.Helper()
	require.Equal(t, seeking, m.run.state)
	m = step1(m, m.Init()())
	t.Cleanup(func() { m.run.stop() })
	return m
}

func TestNoBrokerIsAStateNotARun(t *testing.T) {
	for _, c := range []struct {
		name    string
		lesson  lessonsLesson
		backend lab.Backend
		want    string
	}{
		{"broker-only lesson", brokerLesson(false), "", "no RabbitMQ broker: connection refused · r tries again"},
		{"rabbit named on the command line", brokerLesson(true), lab.Rabbit, "· b runs it in memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(Config{Lessons: []lessonsLesson{c.lesson}, Start: 98, Backend: c.backend, Broker: findNoBroker})
			require.NoError(t, err)
			m = discover(t, m)
			assert.Equal(t, noBroker, m.run.state)
			assert.Nil(t, m.run.h, "nothing runs")
			assert.Equal(t, lab.Rabbit, m.run.backend, "the backend asked for is not replaced")
			frame := m.View()
			assert.Contains(t, frame, "rabbit · speed 0.25× · ✗ no broker")
			assert.NotContains(t, frame, "running")
			assert.Contains(t, frame, c.want)
		})
	}
}

// A lesson whose default is RabbitMQ, run without --backend and without a
// broker, runs its in-memory twin and says so, whole at 80 columns; i
// shows why no broker answered, however long the reason.
func TestDefaultBrokerFallsBackToTheTwinAndSaysSo(t *testing.T) {
	const why = "no RabbitMQ broker found: RABBITMQ_URL=amqp://guest:xxxxx@127.0.0.1:1/: connection refused " +
		"(RABBITMQ_URL is set, so no other broker is tried: fix or unset it)"
	find := func(context.Context) (string, error) { return "", errors.New(why) }
	m, err := New(Config{Lessons: []lessonsLesson{brokerLesson(true)}, Start: 98, Broker: find})
	require.NoError(t, err)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m = discover(t, m)
	assert.Equal(t, running, m.run.state)
	assert.Equal(t, lab.InMem, m.run.backend)
	status := statusLine(m, 80)
	assert.Equal(t, "no RabbitMQ broker, so Q98 runs its in-memory twin (start one, then b) · i: why", status)
	m = step1(m, keyMsg("i"))
	flat := strings.Join(strings.Fields(m.View()), " ")
	assert.Contains(t, flat, "In memory because no RabbitMQ broker answered: "+why)
	checkFrame(t, m, 80, 24)
}

func TestFinishedShowsResultsAndNext(t *testing.T) {
	second := fakeDLQ
	second.ID = "Q99"
	m, err := New(Config{Lessons: []lessonsLesson{fakeDLQ, second}, Start: 98})
	require.NoError(t, err)
	m.run.state = running
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 30})
	m = feed(m, append(chainStart(), chainEnd()...)...)
	m = feed(m, lab.Event{Kind: lab.Summary, Task: "C", Fate: lab.FateDead, Attempt: 2})
	m = step1(m, runDoneMsg{gen: m.run.gen, tables: []render.Table{{Title: "Measured thing", Header: []string{"x", "y"}, Rows: [][]string{{"1", "2"}}}}})
	assert.Equal(t, running, m.run.state, "not finished while events may still come")
	m = step1(m, eventsMsg{gen: m.run.gen, closed: true})
	assert.Equal(t, finished, m.run.state)
	frame := m.View()
	assert.Contains(t, frame, "■ finished")
	assert.Contains(t, frame, "finished · Next: qlab tui 99 (n)")
	assert.Contains(t, frame, "── results (t: the log · ↑/↓ scroll)")
	assert.Contains(t, frame, "Measured thing")
	assert.Contains(t, frame, "What happened")
	m = step1(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'t'}})
	assert.Contains(t, m.View(), "── log ·", "t goes back to the log")

	m.cur = 1
	assert.Contains(t, m.View(), "that was the last lesson")
}

func TestPhaseIsMarked(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m = feed(m, lab.Event{Kind: lab.Phase, Note: "Run 2 (b01…): with a breaker"}, ev(0, lab.Enqueued, "b01", "main", ""))
	frame := m.View()
	assert.Contains(t, frame, "━━ part 1: Run 2 (b01…): with a breaker ━━")
	assert.Equal(t, 24, strings.Count(frame, "\n")+1, "the phase line is counted in the layout")
}

// At 80 columns and more, every box keeps its name readable (Q10's
// longest is abbreviated, never cut) and boxes keep one width whatever
// else appears.
func TestBoxTitlesStayReadableAndWidthsStable(t *testing.T) {
	names := []string{"sequential.queue", "sequential.retry.wait", "sequential.retry.processing",
		"sequential.second.retry.wait", "sequential.second.retry.processing", "sequential.dlq"}
	for _, c := range []struct {
		width int
		want  []string
	}{
		{80, []string{"queue", "retry.wait", "retry.processing", "second.retry.wait", "s.retry.processing", "dlq"}},
		{120, []string{"queue", "retry.wait", "retry.processing", "second.retry.wait", "second.retry.processing", "dlq"}},
	} {
		sc := newScene(nil)
		var widths []int
		for i, n := range names {
			sc.apply(ev(0, lab.Enqueued, fmt.Sprint(i), n, ""), 0)
			for _, s := range sc.slots(c.width) {
				widths = append(widths, s.w)
			}
		}
		var titles []string
		for _, s := range sc.slots(c.width) {
			titles = append(titles, s.title)
			assert.LessOrEqual(t, len([]rune(border("╭", s.title, s.w-2, "╮"))), s.w, "title fits its border at %d", c.width)
		}
		assert.Equal(t, c.want, titles, "at %d columns", c.width)
		assert.Len(t, slices.Compact(widths), 1, "one box width throughout at %d: %v", c.width, widths)
	}
	assert.Equal(t, "s.r.processing", abbreviate("second.retry.processing", 14))
	assert.Equal(t, "email_queue_w…", abbreviate("email_queue_wait", 14))
}

// Lane tokens never overwrite each other (Q12's b05→7←b08).
func TestLaneTokensDoNotOverlap(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	var evs []lab.Event
	for _, id := range []string{"b05", "b06", "b07", "b08"} {
		evs = append(evs, ev(0, lab.Enqueued, id, "main", ""))
	}
	evs = append(evs, ev(0, lab.Enqueued, "x", "retry", ""))
	m = feed(m, evs...)
	m = feed(m, ev(0, lab.Moved, "b05", "main", "retry"), ev(0, lab.Moved, "b06", "main", "retry"),
		ev(0, lab.Moved, "b07", "retry", "main"), ev(0, lab.Moved, "b08", "retry", "main"))
	m = frames(m, moveFrames/2)
	lane := laneOf(t, m.View())
	for _, id := range []string{"b05", "b06", "b07", "b08"} {
		assert.Contains(t, lane, id, "every token is whole on the lane: %q", lane)
	}
}

// TestViewShowsTheNoticeOfItsBackend: a lesson with a notice of its own
// for memory shows that one when it runs in memory.
func TestViewShowsTheNoticeOfItsBackend(t *testing.T) {
	l := fakeDLQ
	l.Notice = "The broker holds it."
	l.Notices = map[lab.Backend]string{lab.InMem: "A timer holds it."}
	frame := testModel(l, 80, 24).View()
	assert.Contains(t, frame, "A timer holds it.")
	assert.NotContains(t, frame, "The broker holds it.")
}

// A view that fell behind says so when the run ends: the lesson went on
// without it (lab.Bounded), and the count of what it missed is shown.
func TestFinishedSaysWhatTheViewMissed(t *testing.T) {
	m, err := New(Config{Lessons: []lessonsLesson{fakeDLQ}, Start: 98})
	require.NoError(t, err)
	m.run.state = running
	m = step1(m, tea.WindowSizeMsg{Width: 100, Height: 30})
	m = feed(m, append(chainStart(), chainEnd()...)...)
	m = step1(m, runDoneMsg{gen: m.run.gen, missed: 1234})
	m = step1(m, eventsMsg{gen: m.run.gen, closed: true})
	require.Equal(t, finished, m.run.state)
	assert.Contains(t, m.View(), "the view fell behind and missed 1234 events")
	assert.NotContains(t, statusLine(m, 80), "…", "read whole at 80 columns")
}

// The status line's own words are read whole at 80 columns: paused on
// either backend, where the broker's TTLs are the catch.
func TestPausedReadsWholeAt80(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m.run.paused = true
	for _, b := range []lab.Backend{lab.InMem, lab.Rabbit} {
		m.run.backend = b
		line := statusLine(m, 80)
		assert.Contains(t, line, "(space resumes)", "on %s:\n%s", b, line)
		assert.NotContains(t, line, "…", "on %s", b)
	}
}

// A broker's requeue that puts the message back at the head (a classic
// queue's original position, a quorum queue on 4.x) shows it in front of
// the box, on a short hop to the box's head; the in-memory requeue (the
// zero Place) still goes to the tail, across the whole box.
func TestRequeueLandsWhereTheEventSays(t *testing.T) {
	for place, want := range map[lab.Place]string{lab.AtHead: "│ A B C", lab.AtTail: "│ B C A"} {
		m := testModel(fakeDLQ, 80, 24)
		moved := ev(100, lab.Moved, "A", "main", "main")
		moved.Place = place
		m = feed(m, ev(0, lab.Enqueued, "A", "main", ""), ev(0, lab.Enqueued, "B", "main", ""),
			ev(0, lab.Enqueued, "C", "main", ""), ev(0, lab.Started, "A", "main", ""),
			ev(100, lab.Failed, "A", "main", ""), moved)
		m = frames(m, 1)
		lane := laneOf(t, m.View())
		box := boxOf(t, m.View(), "main")
		i := strings.Index(lane, "←A")
		require.GreaterOrEqual(t, i, 0, "A is on its way: %q", lane)
		at := len([]rune(lane[:i]))
		if place == lab.AtHead {
			assert.Less(t, at, box.x+box.w/2, "a short hop into the head: %q", lane)
		} else {
			assert.Greater(t, at, box.x+box.w/2, "from the far end: %q", lane)
		}
		m = frames(m, moveFrames)
		assert.Contains(t, m.View(), want+" ", "%q lands there", place)
		assert.Equal(t, "A", m.scene.sc.members["main"][map[lab.Place]int{lab.AtHead: 0, lab.AtTail: 2}[place]].id)
	}
}

// boxOf finds the box of queue q in frame: the column of its top-left
// corner and its width.
func boxOf(t *testing.T, frame, q string) (b struct{ x, w int }) {
	t.Helper()
	for _, l := range strings.Split(frame, "\n") {
		if i := strings.Index(l, "╭ "+q+" "); i >= 0 {
			r := []rune(l)
			b.x = len([]rune(l[:i]))
			for j := b.x + 1; j < len(r); j++ {
				if r[j] == '╮' {
					b.w = j - b.x + 1
					return b
				}
			}
		}
	}
	t.Fatalf("no box %q in\n%s", q, frame)
	return b
}

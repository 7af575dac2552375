package tui

import (
	"context"
	"errors"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
)

// fakeDLQ is a lesson that exists only in these tests: A and B succeed, C
// is poison, waits 1 s in a retry queue, fails again, lands in the DLQ and
// triggers an alert. It exercises the whole queue chain.
var fakeDLQ = lesson.Lesson{
	ID:     "Q98",
	Title:  "Test chain: retry, DLQ, alert",
	Notice: "C fails twice and ends in the dead-letter queue; an alert goes out.",
	InMem:  runFakeDLQ,
}

func runFakeDLQ(ctx context.Context, env *lesson.Env) error {
	sys := inmem.New(ctx, env.Stream, env.Plan)
	main := sys.Queue("main", 8)
	retry := sys.Queue("retry", 8)
	dlq := sys.Queue("dlq", 8)
	for _, id := range []string{"A", "B", "C"} {
		main.Enqueue("Producer", id)
	}
	sys.Worker("Main-Worker", main, func(t *inmem.Task) {
		if sys.Attempt("Main-Worker", main, t) != nil {
			sys.Schedule("Main-Worker", t, main.Name(), retry, time.Second)
		}
	})
	sys.Worker("Retry-Worker", retry, func(t *inmem.Task) {
		if sys.Attempt("Retry-Worker", retry, t) != nil {
			retry.DeadLetter("Retry-Worker", t, dlq, "failed all retries")
		}
	})
	sys.Worker("DLQ-Worker", dlq, func(t *inmem.Task) {
		inmem.Mailer{Stream: env.Stream}.Send(t.ID, inmem.DLQAlert(t.ID))
	})
	return sys.Wait(ctx)
}

// ev builds one synthetic event at lesson time ms.
func ev(ms int64, kind lab.Kind, task, queue, to string) lab.Event {
	return lab.Event{TMs: ms, Kind: kind, Task: task, Queue: queue, To: to, Actor: "Worker"}
}

// chainEvents is the fake lesson's story as a fixed event sequence, up to
// C's wait in the retry queue.
func chainStart() []lab.Event {
	sched := ev(300, lab.Scheduled, "C", "main", "retry")
	sched.DelayMs = 1000
	failed := ev(300, lab.Failed, "C", "main", "")
	failed.Note = "poison task: fails on every attempt"
	return []lab.Event{
		ev(0, lab.Enqueued, "A", "main", ""),
		ev(0, lab.Enqueued, "B", "main", ""),
		ev(0, lab.Enqueued, "C", "main", ""),
		ev(0, lab.Started, "A", "main", ""),
		ev(100, lab.Succeeded, "A", "main", ""),
		ev(100, lab.Started, "B", "main", ""),
		ev(200, lab.Succeeded, "B", "main", ""),
		ev(200, lab.Started, "C", "main", ""),
		failed,
		sched,
	}
}

// chainEnd is the rest: C's second attempt, the DLQ and the alert.
func chainEnd() []lab.Event {
	started := ev(1300, lab.Started, "C", "retry", "")
	started.Attempt = 2
	return []lab.Event{
		started,
		ev(1400, lab.Failed, "C", "retry", ""),
		ev(1400, lab.DeadLettered, "C", "retry", "dlq"),
		{TMs: 1400, Kind: lab.Alerted, Task: "C", Actor: "MockEmailService", Note: "To: admin@example.com\nSubject: DLQ Alert: Task Failed"},
	}
}

// testModel opens lesson l at w×h, colour off, without starting a run:
// tests feed it events by hand.
func testModel(l lesson.Lesson, w, h int) Model {
	m, err := New(Config{Lessons: []lesson.Lesson{l}, Start: l.Number()})
	if err != nil {
		panic(err)
	}
	m.run.state = running
	return step1(m, tea.WindowSizeMsg{Width: w, Height: h})
}

func step1(m Model, msg tea.Msg) Model {
	next, _ := m.Update(msg)
	return next.(Model)
}

// feed hands the model a batch of events, as the idle wait would.
func feed(m Model, evs ...lab.Event) Model {
	return step1(m, eventsMsg{gen: m.run.gen, events: evs})
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// frames advances n animation frames, frameEvery apart.
func frames(m Model, n int) Model {
	for range n {
		at := epoch.Add(time.Duration(m.scene.frame+1) * frameEvery)
		m = step1(m, eventsMsg{gen: m.run.gen, frame: true, at: at})
	}
	return m
}

type lessonsLesson = lesson.Lesson

// findNoBroker is a discovery that finds nothing, as on a machine without one.
func findNoBroker(context.Context) (string, error) {
	return "", errors.New("connection refused")
}

// statusLine is m's status line at width w, as View draws it.
func statusLine(m Model, w int) string {
	return m.status.View(m.run, m.lesson(), nextStep(m.lessons, m.cur), w)
}

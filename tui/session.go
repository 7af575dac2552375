package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/metrics"
	"github.com/queuelab/qlab/render"
)

// session is the open lesson's run as the view tracks it: where it stands,
// its handle and generation, its backend and speed, and what it returned.
// Its Update takes the run's end (runDoneMsg); the lesson's own keys and
// the fault keys go through act and fault, which turn a key into the
// status line's text and the command that hands it to the run. It has
// no View: the status bar draws it, and why and idle give the words the
// status line and the stage show when the run did not start or failed.
type session struct {
	state runState
	h     *runHandle // nil before the first start, and while finding a broker
	gen   int        // of the current run: older runs' messages are dropped

	chosen    lab.Backend // the backend the user named (flag or b); "" means each lesson's default
	backend   lab.Backend // of the current run
	broker    string      // the broker found, once one answered
	speed     float64     // of the current run
	nextSpeed float64     // applied at the next (re)start

	paused    bool        // the user paused the running lesson
	held      []lab.Event // events that arrived while paused
	runDone   bool        // lesson.Run returned
	runErr    error
	missed    int            // events the view missed by falling behind (lab.Bounded)
	tables    []render.Table // the lesson's measured tables, once it returned
	summaries []lab.Event    // the run's summary events, for the results
	brokerErr string         // why no broker answered (noBroker)
	noBroker  string         // why no broker answered, read whole in the notice pane (i)
}

// Update takes the end of the current run; every other message leaves
// the session as it is.
func (s session) Update(msg tea.Msg) session {
	if msg, ok := msg.(runDoneMsg); ok && msg.gen == s.gen {
		s.runDone, s.tables, s.missed = true, msg.tables, msg.missed
		if !errors.Is(msg.err, context.Canceled) {
			s.runErr = msg.err
		}
	}
	return s
}

// pick returns the backend lesson l runs on: the one the user chose where
// l has it (explicit), else l's default.
func (s session) pick(l lesson.Lesson) (b lab.Backend, explicit bool) {
	if s.chosen != "" && l.Runner(s.chosen) != nil {
		return s.chosen, true
	}
	return l.DefaultBackend(), false
}

// metricsRun is the run of lesson l as the metrics name it.
func (s session) metricsRun(l lesson.Lesson) metrics.Run {
	return metrics.Run{Lesson: l.Slug(), Backend: s.backend}
}

// seek starts broker discovery for lesson number cur, or says why it
// can't (find is nil: no RabbitMQ in this build).
func (s *session) seek(find func(context.Context) (string, error), cur int) tea.Cmd {
	s.h = nil
	if find == nil {
		s.state, s.brokerErr = noBroker, "RabbitMQ is not available in this build"
		return nil
	}
	s.state = seeking
	return brokerCmd(find, cur)
}

// stop cancels the current run. The run ends on its own; its late
// messages carry an old gen and are ignored.
func (s session) stop() {
	if s.h != nil {
		s.h.cancel()
	}
}

// awaitStop waits up to d for a cancelled run to return, and reports
// whether it did (true without a run).
func (s session) awaitStop(d time.Duration) bool {
	if s.h == nil {
		return true
	}
	select {
	case <-s.h.finished:
		return true
	case <-time.After(d):
		return false
	}
}

// act hands one of the lesson's own keys to its run, from a command: it
// returns the status line's text and the command, whose answer comes back
// as an actMsg.
func (s session) act(k string) (flash string, cmd tea.Cmd) {
	switch {
	case s.state != running || s.h == nil || s.h.act == nil:
		return k + " acts while the lesson runs: r starts it again", nil
	case s.paused:
		return "paused: space resumes, then " + k, nil
	}
	return k + ": handed to the lesson…", actCmd(s.h, k)
}

// fault breaks, at the student's key, the broker run's own connections
// (x) or the channel of a worker holding a delivery (c), from a command;
// what it broke comes back as an actMsg, and the consequence (a
// redelivery, a reconnect) in the log. dual says the lesson could run on
// RabbitMQ instead (b).
func (s session) fault(k string, dual bool) (flash string, cmd tea.Cmd) {
	switch {
	case s.backend != lab.Rabbit:
		flash = k + " breaks a broker run's connections; this one runs in memory"
		if dual {
			flash += " (b: RabbitMQ)"
		}
		return flash, nil
	case s.state != running || s.h == nil:
		return k + " acts while the lesson runs: r starts it again", nil
	case s.paused:
		return "paused: space resumes, then " + k, nil
	}
	if k == holdKey {
		return k + ": waiting for a worker to hold a delivery…", faultCmd(s.h, k)
	}
	return k + ": cutting the run's connections…", faultCmd(s.h, k)
}

// why says why the run did not start (no broker) or failed, whole,
// wrapped to width w, ending with next (nextStep): the status line shows
// the first line, the stage (empty when the run failed before its first
// event) the rest; a run that failed later has the rest at the top of its
// results.
func (s session) why(l lesson.Lesson, next string, w int) []string {
	text := "no RabbitMQ broker: " + s.brokerErr + " · r tries again"
	if l.InMem != nil {
		text += " · b runs it in memory"
	}
	if s.state == failed {
		text = s.failText(next)
	}
	return render.Wrap(text, max(w, 20), "")
}

// failText is the run's error in full, with what to do next.
func (s session) failText(next string) string {
	return "the run failed: " + strings.TrimSpace(s.runErr.Error()) + " · " + next
}

// idle is what the stage shows before its first box, at width w: why
// the run did not start or failed (the lines of why after the status
// line's), or that it waits for its first event.
func (s session) idle(l lesson.Lesson, next string, w int, st styles) string {
	switch s.state {
	case noBroker, failed:
		if more := s.why(l, next, w)[1:]; len(more) > 0 {
			return st.paint(bad, strings.Join(more, "\n"))
		}
	case running, seeking:
		return st.paint(faint, "  (waiting for the first event…)")
	}
	return ""
}

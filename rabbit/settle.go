package rabbit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
)

// How long WaitSettled waits without progress once the last wait the
// run scheduled has ended (Expect), unless Session.Patience says
// otherwise: minPatience of lesson time, and never less than
// minRealPatience of real time (a loaded machine's scheduling noise: at
// 2 s, two of three runs of the lessons package with broker tests in
// parallel, load 14 on 2 cores, stopped a healthy run as stalled; at 5 s,
// with one core kept busy, so did one in three fault-suite runs whose
// connections were closed while four cases shared a node). Only running
// time counts: while the run's clock is paused (the TUI's space bar, a
// fault the fault suite injects) nothing is expected to move.
//
// The waits the run scheduled are not patience: they are counted as they
// are made (a TTL, an expiration, a timer), so a 5-minute retry at
// --speed 1 is not a stall, and a run that truly stalls is given up
// patience after its last wait, not after a multiple of its longest one.
const (
	minPatience     = 10 * time.Second
	minRealPatience = 10 * time.Second
)

// checkEvery is how often, in real time, WaitSettled checks that the
// session's queues still exist and that tasks still move.
const checkEvery = 100 * time.Millisecond

// ErrStalled is wrapped by WaitSettled's error when no task made progress
// within the session's patience.
var ErrStalled = errors.New("no task made progress")

// patience is the real time WaitSettled allows without progress after the
// last scheduled wait: Session.Patience (or minPatience) of lesson time,
// at least minRealPatience.
func (w *Watch) patience() time.Duration {
	lesson := w.s.Patience
	if lesson <= 0 {
		lesson = minPatience
	}
	return max(w.s.Clock.Real(lesson), minRealPatience)
}

// WaitSettled blocks until every task the stream has seen has a final fate
// (done, dead, dropped or lost) and extra (if not nil) reports true. Every
// way it can end besides that is an error: ctx ends; the session failed
// (Err: a consumed queue deleted, the broker away too long); a queue the
// session created is gone; or no task made progress (a started attempt, a
// new task, a fate) and no message was held for the session's patience
// after the last wait the run scheduled ended (Expect). Broker runs have
// no idle signal like inmem.System's, so it polls the ledger every few
// milliseconds (PollUntil).
func (w *Watch) WaitSettled(ctx context.Context, stream *lab.Stream, extra func() bool) error {
	realPatience := w.patience()
	// moved is read on the lesson clock, which stands still while the
	// run is paused: a student who pauses the TUI for a minute has not
	// stalled the run (measured in real time, a 16 s pause of Q10 ended
	// it with "no task made progress").
	clock := w.s.Clock
	// Stream.Progress, not Tasks: a copy of every record each poll made a
	// 100,000-task run quadratic in CPU (and held the stream's lock).
	_, _, last := stream.Progress()
	moved := clock.Elapsed()
	held, _ := w.s.guest.holdActivity()
	nextCheck := time.Now().Add(checkEvery)
	settled := func() bool {
		tasks, pending, _ := stream.Progress()
		return tasks > 0 && pending == 0 && (extra == nil || extra())
	}
	_, err := PollUntil(ctx, 2*time.Millisecond, 0, func() (bool, error) {
		if settled() {
			return true, nil
		}
		_, _, moves := stream.Progress()
		if err := w.s.Err(); err != nil {
			return false, err
		}
		if time.Now().Before(nextCheck) {
			return false, nil
		}
		nextCheck = time.Now().Add(checkEvery)
		// A consumer busy holding messages from outside (Foreign), a
		// publisher waiting out a lost channel, or a consumer between
		// its lost connection and its new one is moving too: the run's
		// tasks wait behind them, not lost.
		p, busy := w.s.guest.holdActivity()
		if moves != last || p != held || busy {
			last, held, moved = moves, p, clock.Elapsed()
		}
		if err := w.checkQueues(ctx); err != nil {
			return false, err
		}
		due := w.scheduledUntil()
		if clock.Real(clock.Elapsed()-max(moved, due)) > realPatience {
			if settled() { // the last task settled since the poll above: not a stall
				return true, nil
			}
			w.s.health.fail(stalled(clock, realPatience, due, stream.Tasks()))
			return false, w.s.Err()
		}
		return false, nil
	})
	return err
}

// stalled is WaitSettled's error for a run in which nothing moved for
// patience (real time) after its last scheduled wait, which ended at due
// (lesson time; 0 for none). Both times are said in lesson time, with
// the real time and the speed beside them.
func stalled(clock lab.Clock, patience, due time.Duration, tasks []lab.TaskRecord) error {
	after := "; the run scheduled no wait"
	if due > 0 {
		after = fmt.Sprintf(" after the last wait the run scheduled ended at %v", due.Round(time.Millisecond))
	}
	return fmt.Errorf("%w for %v of lesson time (%v real at %g×)%s; still pending: %s; "+
		"a message may have been removed from outside the run",
		ErrStalled, clock.Lesson(patience).Round(time.Millisecond), patience.Round(time.Millisecond),
		clock.Speed(), after, pendingIDs(tasks))
}

// checkQueues fails the session if a queue it created is gone.
func (w *Watch) checkQueues(ctx context.Context) error {
	w.s.topo.owned.mu.Lock()
	owned := slices.Clone(w.s.topo.owned.declared)
	w.s.topo.owned.mu.Unlock()
	for _, name := range owned {
		if _, err := w.s.link.inspect(ctx, name); isNotFound(err) {
			w.s.health.fail(fmt.Errorf("queue %s was deleted while the run used it (not by this run)", name))
			return w.s.Err()
		}
	}
	return nil
}

func pendingIDs(tasks []lab.TaskRecord) string {
	var ids []string
	for _, t := range tasks {
		if t.Fate == lab.FatePending {
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// ReportLost emits a lost event, with reason as its note, for every task
// the stream still has pending: the run is ending without them.
func ReportLost(stream *lab.Stream, actor, reason string) {
	for _, t := range stream.Tasks() {
		if t.Fate == lab.FatePending {
			stream.Emit(lab.Event{Kind: lab.Lost, Task: t.ID, Actor: actor, Note: reason})
		}
	}
}

// ReportDiscarded emits a lost event for every task the stream still has
// pending. Call it after a run that stopped early has deleted its queues:
// the deletion discarded whatever messages they held, and no message may
// vanish without an event saying so.
func ReportDiscarded(stream *lab.Stream, actor string) {
	ReportLost(stream, actor, "the run stopped early; deleting its queues discarded the message")
}

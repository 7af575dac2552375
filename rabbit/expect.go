package rabbit

import (
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A broker run has no idle signal, so WaitSettled gives it up when no
// task moves for the session's patience. A run that waits on purpose is
// not stalled: a message sitting out a queue's TTL or its own expiration
// (Q14's 5-minute retry), a worker's timer (Q19's wait before its nack), a
// scheduler's tick (Q18). The session keeps the lesson time by which the
// last of those waits ends, and the watchdog's patience starts there.
//
// The session counts what it sees: a confirmed publish with an
// expiration, or straight to a queue of its own with a TTL. The flow adds
// what the broker does out of sight (a reject the dead-letter route takes
// into a wait queue, a publish an exchange routes there); a lesson adds
// its own timers (Expect, flow.WaitFor).

// Watch is the part of a Session that tells when a run is done
// (Session.Watch). Its contract: WaitSettled returns once every task has
// its fate, and gives a run up only when no task moved for the session's
// patience after the last wait the run scheduled ended (Expect): a run
// that waits on purpose is not stalled (expect.go, settle.go). Lock: see
// expected.
type Watch struct {
	s     *Session
	waits expected
}

// expected is the lesson time by which the last wait the run scheduled
// ends. mu guards due.
type expected struct {
	mu  sync.Mutex
	due time.Duration // on the session's clock (Clock.Elapsed); 0: none yet
}

// Expect says something the run scheduled happens within lesson duration
// d from now: WaitSettled counts the wait as progress to come, and its
// patience starts when the wait ends. A d of zero or less changes nothing.
func (w *Watch) Expect(d time.Duration) {
	if d <= 0 {
		return
	}
	due := w.s.Clock.Elapsed() + d
	w.waits.mu.Lock()
	defer w.waits.mu.Unlock()
	w.waits.due = max(w.waits.due, due)
}

// scheduledUntil is the lesson time by which the last wait the run
// scheduled ends (0 for none).
func (w *Watch) scheduledUntil() time.Duration {
	w.waits.mu.Lock()
	defer w.waits.mu.Unlock()
	return w.waits.due
}

// expectPublished counts the wait of a message the broker confirmed along
// r: its own expiration, and the TTL of the run's queue it went straight
// to (the default exchange; an exchange's routes are the flow's to count,
// Flow.expectRouted).
func (w *Watch) expectPublished(r route, msg amqp.Publishing) {
	if ms, err := strconv.ParseInt(msg.Expiration, 10, 64); err == nil && ms > 0 {
		w.Expect(w.s.Clock.Lesson(time.Duration(ms) * time.Millisecond))
	}
	if r.exchange == "" {
		w.Expect(w.ttlOf(r.key))
	}
}

// ttlOf is the TTL (lesson time) the session declared queue name (a
// broker name) with; 0 for none or a queue it did not declare.
func (w *Watch) ttlOf(name string) time.Duration {
	w.s.topo.owned.mu.Lock()
	defer w.s.topo.owned.mu.Unlock()
	return w.s.topo.owned.ttls[name]
}

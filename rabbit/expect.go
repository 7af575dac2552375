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

// expected is the lesson time by which the last wait the run scheduled
// ends. mu guards due.
type expected struct {
	mu  sync.Mutex
	due time.Duration // on the session's clock (Clock.Elapsed); 0: none yet
}

// Expect says something the run scheduled happens within lesson duration
// d from now: WaitSettled counts the wait as progress to come, and its
// patience starts when the wait ends. A d of zero or less changes nothing.
func (s *Session) Expect(d time.Duration) {
	if d <= 0 {
		return
	}
	due := s.Clock.Elapsed() + d
	s.waits.mu.Lock()
	defer s.waits.mu.Unlock()
	s.waits.due = max(s.waits.due, due)
}

// scheduledUntil is the lesson time by which the last wait the run
// scheduled ends (0 for none).
func (s *Session) scheduledUntil() time.Duration {
	s.waits.mu.Lock()
	defer s.waits.mu.Unlock()
	return s.waits.due
}

// expectPublished counts the wait of a message the broker confirmed along
// r: its own expiration, and the TTL of the run's queue it went straight
// to (the default exchange; an exchange's routes are the flow's to count,
// Flow.expectRouted).
func (s *Session) expectPublished(r route, msg amqp.Publishing) {
	if ms, err := strconv.ParseInt(msg.Expiration, 10, 64); err == nil && ms > 0 {
		s.Expect(s.Clock.Lesson(time.Duration(ms) * time.Millisecond))
	}
	if r.exchange == "" {
		s.Expect(s.ttlOf(r.key))
	}
}

// ttlOf is the TTL (lesson time) the session declared queue name (a
// broker name) with; 0 for none or a queue it did not declare.
func (s *Session) ttlOf(name string) time.Duration {
	s.owned.mu.Lock()
	defer s.owned.mu.Unlock()
	return s.owned.ttls[name]
}

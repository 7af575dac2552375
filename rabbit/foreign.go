package rabbit

import (
	"context"
	"fmt"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The screening part of a Session: messages that are no task of the run,
// moved to the hold queue (park) and counted. Locks: see screening.

// ForeignReasonHeader is the header a foreign message carries in the hold
// queue: why it was moved there and from where.
const ForeignReasonHeader = "qlab-foreign-reason"

// Foreign is how many messages the session's consumers parked in the hold
// queue, each counted once the broker confirmed its copy there: foreign
// ones the run did not publish (their AppId is not Names.Run) and
// malformed ones (see TaskProblem and Park), which no handler ever
// settles.
func (s *Session) Foreign() int {
	s.screen.mu.Lock()
	defer s.screen.mu.Unlock()
	return s.screen.parked
}

// parkActivity is how many messages the session parked so far, and
// whether it is busy now: parking one (a 10 MB copy takes a while) or
// publishing again after a lost channel (bounded by Session.GiveUpAfter).
// WaitSettled counts both as the run moving.
func (s *Session) parkActivity() (parked int, busy bool) {
	s.screen.mu.Lock()
	parked, parking := s.screen.parked, s.screen.parking
	s.screen.mu.Unlock()
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return parked, parking > 0 || s.health.retrying > 0
}

// park takes delivery d, met on seed queue queue, out of the run's way
// (see Screen for when): it logs it with reason, counts it, publishes a
// copy (properties and headers kept, plus ForeignReasonHeader) to the
// run's hold queue, and acks the original once the broker confirmed the
// copy. If that fails it rejects d without requeue, so the broker
// dead-letters it along the queue's route or drops it: requeueing would
// hand it straight back, a hot loop.
func (s *Session) park(ctx context.Context, queue string, d amqp.Delivery, reason string) {
	s.screen.mu.Lock()
	s.screen.parking++
	s.screen.mu.Unlock()
	reason += "; found in " + s.Names.Of(queue)
	err := s.hold(ctx, d, reason)
	if err == nil {
		err = d.Ack(false)
	}
	s.screen.mu.Lock()
	s.screen.parking--
	if err == nil { // counted once its copy is in the hold queue, as Foreign says
		s.screen.parked++
	}
	s.screen.mu.Unlock()
	if err != nil {
		_ = d.Nack(false, false)
		s.Logger.Warn("rabbit: message rejected (not requeued): holding it failed",
			"queue", s.Names.Of(queue), "message_id", d.MessageId, "app_id", d.AppId, "reason", reason, "err", err.Error())
		return
	}
	s.Logger.Warn("rabbit: message moved to the hold queue; it is not a task of this run",
		"queue", s.Names.Of(queue), "message_id", d.MessageId, "app_id", d.AppId, "reason", reason, "hold", s.Names.hold())
}

// hold publishes a copy of d to the hold queue, declaring the queue first
// if this is the run's first foreign message.
func (s *Session) hold(ctx context.Context, d amqp.Delivery, reason string) error {
	pub, err := s.holdPublisher(ctx)
	if err != nil {
		return err
	}
	msg := Copy(d)
	if msg.Headers == nil {
		msg.Headers = amqp.Table{}
	}
	msg.Headers[ForeignReasonHeader] = reason
	msg.UserId = "" // the broker refuses (406) a user-id other than the connection's
	return pub.deliver(ctx, route{key: s.Names.hold()}, msg)
}

// holdPublisher declares the hold queue (recorded for Close, which keeps
// it while it holds anything) and opens its publisher, once.
func (s *Session) holdPublisher(ctx context.Context) (*Publisher, error) {
	s.screen.pubMu.Lock()
	defer s.screen.pubMu.Unlock()
	s.screen.mu.Lock()
	pub := s.screen.pub
	s.screen.mu.Unlock()
	if pub != nil {
		return pub, nil
	}
	name := s.Names.hold()
	if err := s.queueDeclare(ctx, name, nil); err != nil {
		return nil, fmt.Errorf("declaring the hold queue %s: %w", name, err)
	}
	pub, err := s.Publisher(ctx)
	if err != nil {
		return nil, err
	}
	s.owned.mu.Lock()
	s.owned.declared = append(s.owned.declared, name)
	s.owned.mu.Unlock()
	s.screen.mu.Lock()
	s.screen.pub = pub
	s.screen.mu.Unlock()
	return pub, nil
}

// keepHold reports whether the hold queue holds messages, and if so logs
// where they are and how to remove them once inspected.
func (s *Session) keepHold(ctx context.Context, conn *amqp.Connection) bool {
	q, _ := inspectOn(ctx, conn, s.Names.hold())
	n := q.Messages
	if n == 0 {
		return false
	}
	s.Logger.Warn("rabbit: kept the hold queue: it holds messages this run did not publish",
		"queue", s.Names.hold(), "messages", n, "remove_with", "rabbitmqctl delete_queue "+s.Names.hold())
	return true
}

// parkLeftovers sifts every queue the session declared that still holds
// messages (Sift), so that a message someone else put there (one waiting
// out a wait queue's TTL, say) is parked in the hold queue with a reason
// before Close deletes the queue, never deleted with it unseen. The run's
// own messages stay, for the deletion to discard (ReportDiscarded says
// so). Trouble is logged: the clean-up goes on.
func (s *Session) parkLeftovers(ctx context.Context) {
	s.owned.mu.Lock()
	owned := slices.Clone(s.owned.declared)
	s.owned.mu.Unlock()
	for _, name := range owned {
		if name == s.Names.hold() {
			continue
		}
		if q, err := s.inspect(ctx, name); err != nil || q.Messages == 0 {
			continue
		}
		if _, _, err := s.Sift(ctx, s.Names.Seed(name)); err != nil {
			s.Logger.Warn("rabbit: could not look for foreign messages before deleting a queue", "queue", name, "err", err.Error())
		}
	}
}

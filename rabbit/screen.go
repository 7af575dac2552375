package rabbit

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// NotATask says why d is no task of the run, or returns "" when it is
// one: foreign (its AppId is not Names.Run: the run did not publish it) or
// malformed (TaskProblem). It is the one check every reader of the run's
// queues applies, the Consumer's and Peek's included.
func (s *Session) NotATask(d amqp.Delivery) string {
	if d.AppId != s.Names.Run {
		return fmt.Sprintf("not published by run %s (app-id %q)", s.Names.Run, d.AppId)
	}
	if problem := TaskProblem(d); problem != "" {
		return "malformed: " + problem
	}
	return ""
}

// Screen reports whether delivery d, met on seed queue queue, is a task
// of the run a worker can handle. If it is not (NotATask, or one of the
// body checks also fails: a lesson's own decoder), Screen parks it in the
// run's hold queue with the reason and acks it, as a Consumer does, and
// returns false: the caller must not settle it, count it or report it. d
// must come from a channel that acknowledges by hand (basic.consume or
// basic.get without no-ack). It is for lessons that read a queue with
// amqp091-go's own calls rather than through a Consumer.
func (s *Session) Screen(ctx context.Context, queue string, d amqp.Delivery, also ...func(body []byte) error) bool {
	reason := s.NotATask(d)
	for _, check := range also {
		if reason != "" {
			break
		}
		if err := check(d.Body); err != nil {
			reason = "malformed: " + err.Error()
		}
	}
	if reason == "" {
		return true
	}
	s.park(ctx, queue, d, reason)
	return false
}

// Sift reads every message ready in seed queue (at most peekScan) with
// basic.get and leaves the run's tasks where they are, in their order, as
// Peek does; unlike Peek, it parks each message that is no task of the
// run (Screen) instead of stepping over it. It returns the run's tasks it
// read, which must not be settled, and how many messages it parked. A
// lesson that counts a queue's depth or reads it to the end sifts it
// first, so nobody else's message inflates what it shows.
//
// The run's messages it read go back when its channel closes, marked
// redelivered, as after any read that leaves messages in place.
func (s *Session) Sift(ctx context.Context, queue string) ([]Delivery, int, error) {
	return s.scan(ctx, queue, peekScan, true)
}

// scan basic.gets up to max of the run's tasks from seed queue, reading
// at most peekScan messages, and hands them all back when it closes its
// channel. Each message that is no task is parked (park) or stepped over
// and left in place. Parking runs outside the bound of one broker call:
// a 10 MB copy may take longer, and park bounds each of its own steps.
func (s *Session) scan(ctx context.Context, queue string, max int, park bool) ([]Delivery, int, error) {
	ch, err := withinValue(ctx, func() (*amqp.Channel, error) { return s.channel(ctx) })
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", s.Names.Of(queue), err)
	}
	defer ch.Close() // returns every unacknowledged get to the queue
	var out []Delivery
	parked := 0
	for read := 0; len(out) < max && read < peekScan; read++ {
		d, ok, err := withinValueOK(ctx, func() (amqp.Delivery, bool, error) { return ch.Get(s.Names.Of(queue), false) })
		if err != nil {
			return out, parked, fmt.Errorf("reading %s: %w", s.Names.Of(queue), err)
		}
		if !ok {
			break
		}
		if reason := s.NotATask(d); reason != "" {
			if park {
				s.park(ctx, queue, d, reason)
				parked++
			}
			continue
		}
		out = append(out, Delivery{Delivery: d, Task: d.MessageId, Queue: queue, Deaths: ReadDeaths(d.Headers), names: s.Names})
	}
	return out, parked, nil
}

package rabbit

import (
	"context"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Reader reads the run's queues with basic.get (manual ack) for a lesson
// that works with amqp091-go's own calls (Q16's worker), on a channel of
// the session's connection that outlives the broker: after a lost
// connection or a restart the next Get reopens it, waiting for the broker
// as Session.Retry says. A delivery got on a channel that was lost can no
// longer be settled: its Ack or Nack fails (Transient) and the broker
// hands the message out again, marked redelivered. Not for concurrent use.
type Reader struct {
	s  *Session
	mu sync.Mutex // guards ch against Close from another goroutine
	ch *amqp.Channel
}

// Reader returns a Reader on the session; Close it when done.
func (s *Session) Reader() *Reader { return &Reader{s: s} }

// Get takes the message at the head of seed queue without acknowledging
// it; ok is false when the queue is empty. A queue that is gone (404) is
// an error at once.
func (r *Reader) Get(ctx context.Context, queue string) (d amqp.Delivery, ok bool, err error) {
	name := r.s.Names.Of(queue)
	err = r.s.Retry(ctx, "reading "+name, func() error {
		ch, err := r.channel(ctx)
		if err != nil {
			return err
		}
		d, ok, err = withinValueOK(ctx, func() (amqp.Delivery, bool, error) { return ch.Get(name, false /* autoAck */) })
		if err != nil {
			r.Close() // a get abandoned on it may still hand out a message: closing returns it
		}
		return err
	})
	return d, ok, err
}

// channel is the reader's open channel, opened anew on the session's live
// connection when there is none or the broker closed it.
func (r *Reader) channel(ctx context.Context) (*amqp.Channel, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch != nil && !r.ch.IsClosed() {
		return r.ch, nil
	}
	ch, err := withinValue(ctx, func() (*amqp.Channel, error) { return r.s.link.channel(ctx) })
	if err != nil {
		return nil, err
	}
	r.ch = ch
	return ch, nil
}

// Close closes the reader's channel: what it got and did not settle goes
// back to its queue.
func (r *Reader) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch != nil {
		_ = r.ch.Close()
		r.ch = nil
	}
}

// OnConnection runs f on the session's live connection, as Retry says:
// after the broker closed the connection (or did not answer) it dials a
// new one and runs f again, so f must be safe to run twice (a read, a
// replay that moves what is left). For lessons that call the package's
// connection-level helpers (Inspect, Replay, Take) on the run's broker.
func (s *Session) OnConnection(ctx context.Context, what string, f func(conn *amqp.Connection) error) error {
	return s.Retry(ctx, what, func() error {
		conn, err := s.link.live(ctx)
		if err != nil {
			return err
		}
		return f(conn)
	})
}

package rabbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
)

// opTimeout bounds one broker round trip (declare, delete, confirm) when
// the caller's context has no earlier deadline.
const opTimeout = 5 * time.Second

// Session is one run's link to the broker: a connection for declaring,
// publishing and cleaning up, the run's queue Names and the lesson Clock
// that scales TTLs. Consumers get connections of their own and recover
// from a drop; the session's connection does not (a loss is logged, and
// later declares, publishes and the clean-up fail with an error). Create it
// with Open; Close deletes every queue it declared.
type Session struct {
	URL    string
	Names  Names
	Clock  lab.Clock
	Logger *slog.Logger // connection trouble is logged here; never nil after Open

	conn *amqp.Connection

	mu        sync.Mutex
	declared  []string // broker names, in declaration order
	consumers []*Consumer
}

// Open connects to the broker at url within a few seconds and ctx. names
// picks the queue names (RunNames for a private prefix, SeedNames for the
// seed's); clock scales TTLs. A nil logger means slog.Default().
func Open(ctx context.Context, url string, names Names, clock lab.Clock, logger *slog.Logger) (*Session, error) {
	if logger == nil {
		logger = slog.Default()
	}
	conn, err := dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	s := &Session{URL: url, Names: names, Clock: clock, Logger: logger, conn: conn}
	go s.logClose(conn)
	return s, nil
}

// logClose drains the connection's close notification and logs a close
// the session did not ask for.
func (s *Session) logClose(conn *amqp.Connection) {
	if err, ok := <-conn.NotifyClose(make(chan *amqp.Error, 1)); ok && err != nil {
		s.Logger.Warn("rabbit: session connection lost", "url", Redact(s.URL), "err", err.Error())
	}
}

// Connection returns the session's connection (e.g. for ServerVersion).
func (s *Session) Connection() *amqp.Connection { return s.conn }

// PreconditionError explains a 406 PRECONDITION_FAILED: the queue already
// exists on the broker with other arguments than this run declares.
type PreconditionError struct {
	Queue  string // broker name
	Detail string // the broker's reply text
	// Siblings are the broker names of the other queues declared with it
	// (its Topology): a run that left one stale queue behind usually left
	// them all, so the reset deletes them together.
	Siblings []string
}

// ResetCommand is the shell command that deletes the stale queue and its
// siblings, so the next run declares them afresh.
func (e *PreconditionError) ResetCommand() string {
	if len(e.Siblings) == 0 {
		return "rabbitmqctl delete_queue " + e.Queue
	}
	return "for q in " + strings.Join(append([]string{e.Queue}, e.Siblings...), " ") + "; do rabbitmqctl delete_queue $q; done"
}

// Error says what happened, why, and how to reset it, on one line.
func (e *PreconditionError) Error() string {
	return fmt.Sprintf("queue %s already exists on the broker with other arguments than this run declares (%s): "+
		"an earlier run with other settings (e.g. another --speed with --names seed) left it behind; "+
		"reset and run again: %s", e.Queue, e.Detail, e.ResetCommand())
}

// Declare declares every queue of t as durable, with its TTL and
// dead-letter route, and remembers it for Close. A queue that exists with
// other arguments yields a *PreconditionError.
func (s *Session) Declare(ctx context.Context, t Topology) error {
	if err := t.Check(); err != nil {
		return err
	}
	for _, q := range t.Queues {
		err := s.declare(ctx, q.Name, Arguments(q, s.Names, s.Clock))
		var pe *PreconditionError
		if errors.As(err, &pe) {
			for _, other := range t.Queues {
				if other.Name != q.Name {
					pe.Siblings = append(pe.Siblings, s.Names.Of(other.Name))
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// declare declares one durable queue of the session's topology and
// records it for deletion at Close.
func (s *Session) declare(ctx context.Context, seedName string, args amqp.Table) error {
	name := s.Names.Of(seedName)
	if err := s.queueDeclare(ctx, name, args); err != nil {
		var pre *PreconditionError
		if errors.As(err, &pre) {
			return err
		}
		return fmt.Errorf("declaring queue %s: %w", name, err)
	}
	s.mu.Lock()
	s.declared = append(s.declared, name)
	s.mu.Unlock()
	return nil
}

// Redeclare declares queue q again exactly as Declare would, without
// recording it. The broker accepts it only if the queue's arguments are
// equivalent, so this reads the declared arguments back by behaviour.
func (s *Session) Redeclare(ctx context.Context, q Queue, args amqp.Table) error {
	if args == nil {
		args = Arguments(q, s.Names, s.Clock)
	}
	return s.queueDeclare(ctx, s.Names.Of(q.Name), args)
}

// queueDeclare declares durable queue name on a channel of its own (a 406
// closes the channel it happens on, and the session must stay usable) and
// turns a 406 PRECONDITION_FAILED into a *PreconditionError.
func (s *Session) queueDeclare(ctx context.Context, name string, args amqp.Table) error {
	err := within(ctx, func() error {
		ch, err := s.conn.Channel()
		if err != nil {
			return err
		}
		defer ch.Close()
		_, err = ch.QueueDeclare(name, true, false, false, false, args)
		return err
	})
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.PreconditionFailed {
		return &PreconditionError{Queue: name, Detail: amqpErr.Reason}
	}
	return err
}

// Depth returns how many messages are ready in seed queue name (a passive
// declare: it fails if the queue does not exist).
func (s *Session) Depth(ctx context.Context, name string) (int, error) {
	var n int
	err := within(ctx, func() error {
		ch, err := s.conn.Channel()
		if err != nil {
			return err
		}
		defer ch.Close()
		q, err := ch.QueueDeclarePassive(s.Names.Of(name), true, false, false, false, nil)
		n = q.Messages
		return err
	})
	return n, err
}

// InterruptConsumers cuts every consumer's connection at once, as a killed
// worker process would (see Consumer.Interrupt): what they held unacked
// goes back to its queue, messages waiting in the broker stay, and each
// consumer reconnects.
func (s *Session) InterruptConsumers() {
	s.mu.Lock()
	consumers := append([]*Consumer(nil), s.consumers...)
	s.mu.Unlock()
	for _, c := range consumers {
		c.Interrupt()
	}
}

// Close stops the session's consumers, deletes every queue the session
// declared, and closes the connection, each step bounded by ctx. It
// returns the first error.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	consumers, declared := s.consumers, s.declared
	s.consumers, s.declared = nil, nil
	s.mu.Unlock()
	for _, c := range consumers {
		c.Stop()
	}
	var first error
	if len(declared) > 0 {
		first = within(ctx, func() error {
			ch, err := s.conn.Channel()
			if err != nil {
				return err
			}
			defer ch.Close()
			for _, name := range declared {
				if _, err := ch.QueueDelete(name, false, false, false); err != nil {
					return fmt.Errorf("deleting queue %s: %w", name, err)
				}
			}
			return nil
		})
	}
	if err := s.conn.Close(); first == nil && err != nil && !errors.Is(err, amqp.ErrClosed) {
		first = err
	}
	return first
}

// within runs f, returning its error, or ctx's (or opTimeout's) error if f
// has not returned by then. amqp091-go's synchronous methods take no
// context; a stuck f is abandoned to finish on its own when its
// connection closes.
func within(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("broker did not answer: %w", ctx.Err())
	}
}

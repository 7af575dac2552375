package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/mail"
	"github.com/queuelab/qlab/seeds/raffle"
)

// Topology is everything serve declares: seed 004's RaffleAPI and seed
// 001's scheduled mail (seeds/mail, as lesson Q11's strategy (c) runs it).
func Topology() flow.Topology {
	t := raffle.Topology()
	t.Queues = append(slices.Clip(t.Queues), mail.Topology().Queues...)
	return t
}

// Route is where a message goes, in seed names: through Exchange with
// routing key Key, or, with Exchange "", straight to the queue named Key.
type Route struct{ Exchange, Key string }

// Publisher puts one message on the broker. Publish returns nil once the
// broker confirmed the message or, for a publisher without confirms, once
// it was written to the connection; an error means the API must not
// promise anything. Confirms says which of the two a nil means.
type Publisher interface {
	Publish(ctx context.Context, r Route, msg amqp.Publishing) error
	Confirms() bool
}

// What the API knows of a message it could not promise, one error each:
// the HTTP answer and what a client may do next depend on which. Every
// error Publish returns wraps exactly one of them.
var (
	// ErrNotPublished: the message never reached the broker (no
	// connection, no channel, the publishes before it held the publisher
	// past the bound, or the channel was closed before the write). The
	// broker does not have it; publishing it again is safe.
	ErrNotPublished = errors.New("nothing published")
	// ErrNotStored: the broker answered that it did not store the
	// message: a nack (basic.nack) or a return (basic.return: no queue is
	// bound for it). Publishing it again is safe, and may fail the same
	// way.
	ErrNotStored = errors.New("the broker did not store the message")
	// ErrUnknown: the message was sent but no confirm came back: the
	// channel or the connection closed before it (a broker that stops
	// takes the ones it stored down with it, unconfirmed), or the bound
	// passed. The broker may hold it: publishing it again may store it
	// twice.
	ErrUnknown = errors.New("no confirm came: the broker may or may not have stored the message")
)

// BrokerPublisher publishes on a channel of a connection of its own, one
// message at a time, with or without publisher confirms. It dials when it
// has no live channel, so a broker that comes back is used again. Safe for
// concurrent use.
type BrokerPublisher struct {
	url      string
	names    rabbit.Names
	confirms bool
	logger   *slog.Logger

	// turn is held by the one publish under way (a lock that a request
	// can stop waiting for when its own bound passes); it guards the rest.
	turn    chan struct{}
	s       *rabbit.Session // the connection's owner; it declares nothing
	ch      *amqp.Channel
	returns chan amqp.Return
}

// NewBrokerPublisher publishes to the broker at url under names; confirms
// puts its channel in confirm mode and publishes mandatory. It connects on
// the first Publish.
func NewBrokerPublisher(url string, names rabbit.Names, confirms bool, logger *slog.Logger) *BrokerPublisher {
	return &BrokerPublisher{url: url, names: names, confirms: confirms, logger: logger, turn: make(chan struct{}, 1)}
}

// Confirms reports whether a nil from Publish means the broker confirmed.
func (p *BrokerPublisher) Confirms() bool { return p.confirms }

// Publish sends msg along r, stamped with the run's AppId. With confirms
// it waits, within ctx, for the broker's confirm and looks for a return;
// its error wraps ErrNotPublished, ErrNotStored (a nack, a return) or
// ErrUnknown (sent, no confirm). Without, it returns once the frames are
// written: a message the broker drops after that is a nil here — the
// seed's trap.
func (p *BrokerPublisher) Publish(ctx context.Context, r Route, msg amqp.Publishing) error {
	if !p.lock(ctx) {
		return fmt.Errorf("%w: waiting for the publishes before it: %w", ErrNotPublished, ctx.Err())
	}
	defer p.unlock()
	ch, err := p.channel(ctx)
	if err != nil {
		return fmt.Errorf("%w: no connection: %v", ErrNotPublished, err)
	}
	exchange, key := p.names.Of(r.Exchange), r.Key
	if r.Exchange == "" {
		exchange, key = "", p.names.Of(r.Key)
	}
	msg.AppId = p.names.Run
	if !p.confirms {
		err := ch.PublishWithContext(ctx, exchange, key,
			false, // mandatory: no, the seed does not ask for unroutable messages back
			false, // immediate: RabbitMQ does not support it
			msg)
		if err != nil {
			return sendError(err)
		}
		return nil
	}
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key,
		true,  // mandatory: a message no queue takes comes back (basic.return)
		false, // immediate: RabbitMQ does not support it
		msg)
	if err != nil {
		return sendError(err)
	}
	if err := confirmError(ch, rabbit.WaitConfirm(ctx, dc)); err != nil {
		// A late confirm on this channel would be read by nobody: the next
		// publish opens another. Closed in the background: channel.close
		// waits for the broker's close-ok, and a broker that did not
		// confirm may not answer that either.
		p.ch = nil
		go func() { _ = ch.Close() }()
		return err
	}
	if p.returned(msg.MessageId) {
		return fmt.Errorf("%w: no queue took it (a basic.return from exchange %q, key %q)", ErrNotStored, exchange, key)
	}
	return nil
}

// sendError classifies the error of writing a publish. amqp091-go checks
// the channel and the context before it writes: ErrClosed or a context
// error then means nothing left. Any other error came from the socket in
// the middle of the write, and the broker may have read all of it.
func sendError(err error) error {
	if errors.Is(err, amqp.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", ErrNotPublished, err)
	}
	return fmt.Errorf("%w: writing it failed: %v", ErrUnknown, err)
}

// confirmError classifies how the wait for a sent message's confirm
// ended. amqp091-go resolves every outstanding confirm as a nack when
// its channel closes (deferredConfirmations.Close, v1.16.0), after it
// marked the channel closed: a "nack" on a closed channel is a confirm
// that never came, and the broker may hold the message (RabbitMQ stores
// a message before it confirms it). Only a nack on a channel still open
// is the broker's basic.nack.
func confirmError(ch *amqp.Channel, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rabbit.ErrNacked) && !ch.IsClosed():
		return fmt.Errorf("%w: the broker nacked it (basic.nack)", ErrNotStored)
	case errors.Is(err, rabbit.ErrNacked):
		return fmt.Errorf("%w: the channel closed before the confirm came", ErrUnknown)
	default:
		return fmt.Errorf("%w: %v", ErrUnknown, err)
	}
}

// returned reports whether the broker handed back the message with id.
// RabbitMQ sends a basic.return before the basic.ack of the same message,
// and publishes here go one at a time, so after the confirm its return,
// if any, is in the channel already.
func (p *BrokerPublisher) returned(id string) bool {
	found := false
	for {
		select {
		case r, ok := <-p.returns:
			if !ok {
				return found
			}
			found = found || r.MessageId == id
		default:
			return found
		}
	}
}

// channel is the live channel, opening a connection and a channel within
// ctx when there is none. The caller holds the turn.
func (p *BrokerPublisher) channel(ctx context.Context) (*amqp.Channel, error) {
	if p.ch != nil && !p.ch.IsClosed() {
		return p.ch, nil
	}
	if p.s == nil || p.s.Connection().IsClosed() {
		p.closeLocked()
		s, err := rabbit.Open(ctx, p.url, p.names, lab.NewClock(1), p.logger)
		if err != nil {
			return nil, err
		}
		p.s = s
	}
	ch, err := openChannel(ctx, p.s.Connection(), p.confirms)
	if err != nil {
		return nil, err
	}
	p.returns = nil
	if p.confirms {
		p.returns = ch.NotifyReturn(make(chan amqp.Return, 16))
	}
	p.ch = ch
	return ch, nil
}

// openChannel opens a channel on conn, in confirm mode if asked, within
// ctx: amqp091-go waits for the broker's channel.open-ok with no bound, and
// a broker that stopped answering must be a 503, not a request that hangs
// with the publisher's lock held. A channel that opens too late is closed.
func openChannel(ctx context.Context, conn *amqp.Connection, confirms bool) (*amqp.Channel, error) {
	type opened struct {
		ch  *amqp.Channel
		err error
	}
	done := make(chan opened, 1)
	go func() {
		ch, err := conn.Channel()
		if err == nil && confirms {
			if err = ch.Confirm(false); err != nil {
				_ = ch.Close()
				ch = nil
			}
		}
		done <- opened{ch, err}
	}()
	select {
	case o := <-done:
		return o.ch, o.err
	case <-ctx.Done():
		go func() {
			if o := <-done; o.ch != nil {
				_ = o.ch.Close()
			}
		}()
		return nil, fmt.Errorf("opening a channel: %w", ctx.Err())
	}
}

// lock takes the publisher's turn, or gives up when ctx ends first.
func (p *BrokerPublisher) lock(ctx context.Context) bool {
	select {
	case p.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *BrokerPublisher) unlock() { <-p.turn }

// Close closes the publisher's connection, once the publish under way (if
// any) is done.
func (p *BrokerPublisher) Close(ctx context.Context) error {
	if !p.lock(ctx) {
		return ctx.Err()
	}
	defer p.unlock()
	if p.s == nil {
		return nil
	}
	err := p.s.Close(ctx)
	p.s, p.ch = nil, nil
	return err
}

// closeLocked drops a dead connection. The caller holds the turn.
func (p *BrokerPublisher) closeLocked() {
	if p.s != nil {
		_ = p.s.Close(context.Background()) // declares nothing: only closes the connection
	}
	p.s, p.ch = nil, nil
}

// Broker is what serve holds on the broker: the declared topology (through
// the flow seam, which deletes what it declared), the publisher, and lesson
// seed 001's router and mail worker (seeds/mail), which take a scheduled mail on from its
// first hop until it is sent.
type Broker struct {
	flow   *rabbit.Flow
	stream *lab.Stream
	mail   *mail.Service
	Pub    *BrokerPublisher
	close  sync.Once
	err    error // Close's result
}

// Options are how OpenBroker runs.
type Options struct {
	// Confirms puts the publisher in confirm mode (publishing mandatory);
	// false publishes as the seed does.
	Confirms bool
	// Keep leaves the queues and exchanges, and the messages in them, on
	// the broker at Close (see rabbit.Session.Keep).
	Keep bool
	// Logger gets connection trouble; nil logs nothing (as rabbit.Open).
	Logger *slog.Logger
}

// OpenBroker declares Topology on the broker at url under names (refusing
// queues that exist already), starts seed 001's router and mail worker, and
// returns the Broker. The router and the worker run until ctx ends or
// Close; they, and the clean-up, report to stream, whose clock must run
// at speed 1.
func OpenBroker(ctx context.Context, url string, names rabbit.Names, opts Options, stream *lab.Stream) (*Broker, error) {
	s, err := rabbit.Open(ctx, url, names, lab.NewClock(1), opts.Logger)
	if err != nil {
		return nil, err
	}
	s.Keep = opts.Keep
	f, err := rabbit.NewFlow(ctx, s, stream)
	if err != nil {
		_ = s.Close(ctx)
		return nil, err
	}
	if err := f.Declare(ctx, Topology()); err != nil {
		_ = f.Close(ctx) // deletes whatever part of it was declared
		return nil, err
	}
	svc, err := mail.StartService(ctx, s, stream)
	if err != nil {
		_ = f.Close(ctx)
		return nil, err
	}
	return &Broker{flow: f, stream: stream, mail: svc, Pub: NewBrokerPublisher(url, s.Names, opts.Confirms, s.Logger)}, nil
}

// Names are the broker names the topology was declared under.
func (b *Broker) Names() rabbit.Names { return b.flow.Session().Names }

// Close stops the router and the mail worker, closes the publisher, and
// deletes the queues and exchanges the broker declared (a message still
// in them is reported lost to the stream), unless Options.Keep left them.
// unknown are the ids the API answered 504 (Server.Unknown): one still
// pending may never have reached a queue, and its lost event says so
// rather than that the deletion discarded it. Only the first call acts;
// later ones return its result.
func (b *Broker) Close(ctx context.Context, unknown ...string) error {
	b.close.Do(func() {
		b.mail.Stop(ctx)
		_ = b.Pub.Close(ctx)
		if !b.flow.Session().Keep { // kept, a stored message stays where it is
			b.reportUnknown(unknown)
		}
		b.err = b.flow.Close(ctx)
	})
	return b.err
}

// reportUnknown reports lost each task of unknown still pending, with
// the one thing known of it: no confirm came.
func (b *Broker) reportUnknown(unknown []string) {
	if len(unknown) == 0 {
		return
	}
	for _, t := range b.stream.Tasks() {
		if t.Fate == lab.FatePending && slices.Contains(unknown, t.ID) {
			b.stream.Emit(lab.Event{Kind: lab.Lost, Task: t.ID, Actor: "Cleanup", Note: UnknownLost})
		}
	}
}

// UnknownLost is the note of a 504's task still pending at Close: it may
// never have been stored, so "deleting the queues discarded it" could
// be false.
const UnknownLost = "outcome unknown (504): no confirm came, so it may never have been " +
	"stored; if it was, deleting the run's queues discarded it"

package check

import (
	"context"
	"fmt"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/rabbit"
)

// The variables rabbittest reads, named again here: a check runs inside
// qlab, and importing that test helper linked testify into every student's
// binary (a test in this package holds the names equal).
const (
	requireBrokerEnv = "QLAB_REQUIRE_BROKER" // rabbittest.RequireEnv
	broker43Env      = "QLAB_RABBITMQ43_URL" // rabbittest.Env43
)

// Broker finds the RabbitMQ broker a broker exercise is checked against
// (RABBITMQ_URL, else the default URL), within 10 s. Without one it skips
// the check with the reason, or, under QLAB_REQUIRE_BROKER=1 (CI), fails
// it as a check of "this machine"; either way ok is false and the checker
// should return.
func (c *Checker) Broker() (url string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbit.Discover(ctx, rabbit.DiscoverOptions{})
	if err == nil {
		return b.URL, true
	}
	if os.Getenv(requireBrokerEnv) == "1" {
		c.That(Run{Name: "this machine"}, "a RabbitMQ broker to check against", false, err.Error(), "a broker ("+requireBrokerEnv+"=1)", "")
		return "", false
	}
	c.Skip("needs a RabbitMQ broker (start one, or set RABBITMQ_URL): " + err.Error())
	return "", false
}

// ScratchExpires deletes a scratch queue nobody used for a minute, should
// a killed check leave it behind.
const ScratchExpires = int64(60_000)

// Scratch is a broker connection on which a checker declares queues under
// a private random prefix; Close deletes every one of them (and only
// those) and closes the connection.
type Scratch struct {
	Conn   *amqp.Connection
	Prefix string
	queues []string
}

// NewScratch dials url for a checker's queues.
func NewScratch(url string) (*Scratch, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return nil, err
	}
	return &Scratch{Conn: conn, Prefix: rabbit.RunNames().Prefix}, nil
}

// Declare declares queue name (a full broker name: give it the prefix)
// durable (a quorum queue must be) with args plus x-expires, on a channel
// of its own so a refusal (406) leaves the connection usable, and
// remembers it for Close.
func (s *Scratch) Declare(name string, args amqp.Table) error {
	ch, err := s.Conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	with := amqp.Table{"x-expires": ScratchExpires}
	for k, v := range args {
		with[k] = v
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, with); err != nil {
		return err
	}
	s.queues = append(s.queues, name)
	return nil
}

// Own records queue name, declared by the student's code under the
// prefix, for Close to delete with the checker's own.
func (s *Scratch) Own(name string) { s.queues = append(s.queues, name) }

// Close deletes the queues Declare made (and those Own recorded) and
// closes the connection.
func (s *Scratch) Close() {
	if ch, err := s.Conn.Channel(); err == nil {
		for _, q := range s.queues {
			_, _ = ch.QueueDelete(q, false, false, false)
		}
		_ = ch.Close()
	}
	_ = s.Conn.Close()
}

// Publish publishes msg to queue through the default exchange (see
// Publisher) on a channel of its own.
func (s *Scratch) Publish(ctx context.Context, queue string, msg amqp.Publishing) error {
	p, err := NewPublisher(s.Conn)
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Publish(ctx, queue, msg)
}

// Publisher publishes on one channel in confirm mode, mandatory, so a
// message no queue takes is an error the student sees, not a silent drop.
// Publish calls must not overlap.
type Publisher struct {
	ch      *amqp.Channel
	returns chan amqp.Return
}

// NewPublisher opens a confirm-mode channel on conn.
func NewPublisher(conn *amqp.Connection) (*Publisher, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, err
	}
	return &Publisher{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 8))}, nil
}

// Close closes the publisher's channel.
func (p *Publisher) Close() { _ = p.ch.Close() }

// Publish publishes msg to queue through the default exchange and waits
// for the broker's confirm: a nack or a return is an error.
func (p *Publisher) Publish(ctx context.Context, queue string, msg amqp.Publishing) error {
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, msg)
	if err != nil {
		return err
	}
	acked, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return err
	case !acked:
		return fmt.Errorf("the broker refused the message to %s (basic.nack)", queue)
	}
	select { // the broker sends basic.return before the confirm
	case ret := <-p.returns:
		return fmt.Errorf("no queue named %q: the message was returned (%d %s)", queue, ret.ReplyCode, ret.ReplyText)
	default:
		return nil
	}
}

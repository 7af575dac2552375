//go:build qlabex

package quorumqueue

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/exercises/check"
)

// wait bounds each step against the broker: a declare, a Publish, the
// read-back.
const wait = 10 * time.Second

// The full queue the refusal check publishes to: it holds two messages
// and refuses (basic.nack) every publish beyond them.
const (
	fullLength = 2
	fullSent   = 5
)

func TestQuorumQueue(t *testing.T) {
	c := check.New(t)
	url, ok := c.Broker()
	if !ok {
		return
	}
	s, err := check.NewScratch(url)
	if err != nil {
		c.That(check.Run{Name: "this machine"}, "a RabbitMQ broker to check against", false, err.Error(), "a connection", "")
		return
	}
	defer s.Close()
	if checkDeclare(c, s) {
		checkPublish(c, s)
	}
	checkRefusal(c, s)
}

// checkDeclare runs the student's Declare, then re-declares the queue as
// a durable quorum queue: the broker accepts that only when the queue it
// has is one, and otherwise says what differs. It reports whether the
// queue is there to publish to.
func checkDeclare(c *check.Checker, s *check.Scratch) bool {
	r := check.Run{Name: "seed 003's " + Queue}
	name := s.Prefix + Queue
	s.Own(name) // whatever Declare made of it, it goes when the check ends
	err := onChannel(s, func(ch *amqp.Channel) error { return Declare(ch, name) })
	if !c.That(r, "the broker accepts your declaration", err == nil,
		brokerSays(err, s.Prefix), "the queue declared", "") {
		return false
	}
	err = onChannel(s, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(name,
			true,  // durable
			false, // autoDelete
			false, // exclusive
			false, // noWait
			amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum})
		return err
	})
	return c.That(r, "the queue is a durable quorum queue, as the broker has it", err == nil,
		brokerSays(err, s.Prefix), "a durable quorum queue, no other arguments", "")
}

// checkPublish runs the student's Publish with Batch messages on a fresh
// channel and reads them back from the queue: every one there, every one
// persistent.
func checkPublish(c *check.Checker, s *check.Scratch) {
	r := check.Run{Name: fmt.Sprintf("%d birthday messages to %s", Batch, Queue)}
	name := s.Prefix + Queue
	bodies := make([][]byte, Batch)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"id":"m%02d","type":"birthday"}`, i+1)
	}
	err := publish(s, name, bodies)
	if !c.That(r, "Publish returns nil once the broker has every message", err == nil,
		brokerSays(err, s.Prefix), "nil", "") {
		return
	}
	got, err := readBack(s, name, len(bodies))
	c.That(r, "every message is in the queue when Publish returns", err == nil && len(got) == len(bodies),
		fmt.Sprintf("%d of %d read back (%v)", len(got), len(bodies), err), fmt.Sprintf("%d of %d", len(bodies), len(bodies)), "")
	var transient []string
	for _, d := range got {
		if d.DeliveryMode != amqp.Persistent {
			transient = append(transient, fmt.Sprintf("%s (delivery mode %d)", d.Body, d.DeliveryMode))
		}
	}
	c.That(r, "every message is published persistent (delivery mode 2)", len(transient) == 0,
		fmt.Sprintf("%d of %d not persistent, e.g. %s", len(transient), len(got), strings.Join(first(transient, 2), ", ")),
		"delivery mode 2 on every message", "")
}

// checkRefusal hands the student's Publish a queue of the checker's that
// holds fullLength messages and refuses the rest: a publisher that waits
// for its confirms sees the nack; one that fires and forgets returns nil.
func checkRefusal(c *check.Checker, s *check.Scratch) {
	r := check.Run{Name: fmt.Sprintf("%d messages to a full queue (x-max-length %d, x-overflow reject-publish)", fullSent, fullLength)}
	name := s.Prefix + "full"
	if err := s.Declare(name, amqp.Table{"x-max-length": fullLength, "x-overflow": "reject-publish"}); err != nil {
		c.That(r, "a RabbitMQ broker to check against", false, err.Error(), "the checker's full queue declared", "")
		return
	}
	bodies := make([][]byte, fullSent)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"id":"f%d","type":"birthday"}`, i+1)
	}
	err := publish(s, name, bodies)
	c.That(r, "a refused message (basic.nack) is an error from Publish", err != nil,
		fmt.Sprintf("nil, though the broker nacked %d of %d (the queue took %d)", fullSent-fullLength, fullSent, fullLength),
		"an error: the broker refused a message", "")
}

// publish runs the student's Publish on a fresh channel, within wait.
func publish(s *check.Scratch, queue string, bodies [][]byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return onChannel(s, func(ch *amqp.Channel) error { return Publish(ctx, ch, queue, bodies) })
}

// onChannel runs f on a channel of its own, so a refusal (which closes
// the channel) leaves the connection usable, and closes it after.
func onChannel(s *check.Scratch, f func(*amqp.Channel) error) error {
	ch, err := s.Conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	return f(ch)
}

// readBack takes up to n messages from queue (the checker's own, under
// its prefix), waiting at most wait for them.
func readBack(s *check.Scratch, queue string, n int) ([]amqp.Delivery, error) {
	ch, err := s.Conn.Channel()
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	deliveries, err := ch.Consume(queue, "",
		true,  // autoAck: the checker only reads them
		false, // exclusive
		false, // noLocal
		false, // noWait
		nil)
	if err != nil {
		return nil, err
	}
	timeout := time.After(wait)
	var got []amqp.Delivery
	for len(got) < n {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return got, errors.New("the checker's channel closed")
			}
			got = append(got, d)
		case <-timeout:
			return got, fmt.Errorf("no more after %v", wait)
		}
	}
	return got, nil
}

// brokerSays is err as the student reads it, short enough for one line
// of an 80-column screen: the broker's code and its words about what it
// refused, without the queue's name and vhost (the student knows them)
// and, for a re-declaration, without what the checker sent (the check
// says that): "406 inequivalent arg 'x-queue-type': current is none".
// "nil" for none.
func brokerSays(err error, prefix string) string {
	var amqpErr *amqp.Error
	switch {
	case err == nil:
		return "nil"
	case errors.As(err, &amqpErr):
		reason := strings.TrimPrefix(amqpErr.Reason, "PRECONDITION_FAILED - ")
		reason = whichQueue.ReplaceAllString(reason, "")
		reason = whatWasSent.ReplaceAllString(reason, ": $1")
		return fmt.Sprintf("%d %s", amqpErr.Code, reason)
	}
	return strings.ReplaceAll(err.Error(), prefix, "")
}

// The parts of a 406's reason that brokerSays leaves out.
var (
	whichQueue  = regexp.MustCompile(` for queue '[^']*' in vhost '[^']*'`)
	whatWasSent = regexp.MustCompile(`: received .* but (current is .*)$`)
)

func first(xs []string, n int) []string { return xs[:min(n, len(xs))] }

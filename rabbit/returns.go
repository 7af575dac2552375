package rabbit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
)

// What a quorum queue counts when a message comes back, measured: the
// lessons that depend on it (Q19's fake delay, Q21's delivery limit) show
// the figures of the broker they run on beside the other version's.
//
// RabbitMQ 4.3 maps the AMQP 0-9-1 settles to its own outcomes
// (rabbitmq-server pull request #15387): basic.reject with requeue is a
// failed delivery and counts in x-delivery-count, basic.nack with requeue
// is a plain return and does not; x-acquired-count counts every time a
// consumer took the message. Before 4.3 every return counted.

// Probes is the part of a Session that runs one-off experiments on the
// broker (Session.Probes): what a quorum queue counts when a message comes
// back (Returns, Limit), and what the broker answers to a message no
// queue takes (PublishUnroutable, PublishWatched). Its contract: each
// experiment uses queues of the run's own, declared through the session
// (and so deleted at Close), or none, and reports what the broker did
// without trying again. It holds no state of its own.
type Probes struct {
	s *Session
}

// A Return is one way a consumer gives a message back to its queue.
type Return string

// The ways Probes.Returns measures.
const (
	NackRequeue   Return = "basic.nack, requeue"
	RejectRequeue Return = "basic.reject, requeue"
	ChannelClosed Return = "channel closed, unacked"
)

// Returns are the ways, in the order Probes.Returns measures them.
var Returns = []Return{NackRequeue, RejectRequeue, ChannelClosed}

// Returned is what the deliveries of one message read after it came back
// rounds times the same way: x-delivery-count and x-acquired-count on
// each delivery, the first included (-1: the header was absent).
type Returned struct {
	Way           Return
	DeliveryCount []int64
	Acquired      []int64
}

// Returns declares a quorum queue of the run's, publishes one
// message per way into it and, for each, takes it with basic.get and
// gives it back that way rounds times, reading the counters on each
// delivery (rounds+1 of them).
func (pr *Probes) Returns(ctx context.Context, rounds int) ([]Returned, error) {
	var out []Returned
	for _, way := range Returns {
		r, err := pr.probeReturn(ctx, way, rounds)
		if err != nil {
			return out, fmt.Errorf("probing %s: %w", way, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ReturnsTopology is what Probes.Returns declares: a quorum queue per way.
// A lesson that probes lists it in its Topologies, so qlab broker clean
// finds the queues of a run that was killed.
func ReturnsTopology() flow.Topology {
	var t flow.Topology
	for _, way := range Returns {
		t.Queues = append(t.Queues, flow.Queue{Name: probeQueue(way), Role: flow.Work, Quorum: true})
	}
	return t
}

// LimitQueue is the seed name of Limit's quorum queue for way.
func LimitQueue(way Return) string {
	return "probe.limit." + strings.TrimPrefix(probeQueue(way), "probe.returns.")
}

// probeQueue is the seed name of a probe's quorum queue for way.
func probeQueue(way Return) string {
	switch way {
	case NackRequeue:
		return "probe.returns.nack"
	case RejectRequeue:
		return "probe.returns.reject"
	}
	return "probe.returns.close"
}

func (pr *Probes) probeReturn(ctx context.Context, way Return, rounds int) (Returned, error) {
	r := Returned{Way: way}
	queue := probeQueue(way)
	ch, err := pr.probeQueue(ctx, queue)
	if err != nil {
		return r, err
	}
	defer func() { _ = ch.Close() }()
	for i := 0; i <= rounds; i++ {
		d, err := getOne(ctx, ch, pr.s.Names.Of(queue))
		if err != nil {
			return r, err
		}
		r.DeliveryCount = append(r.DeliveryCount, counterOr(d.Headers, DeliveryCountHeader))
		r.Acquired = append(r.Acquired, counterOr(d.Headers, AcquiredCountHeader))
		if i == rounds {
			return r, d.Ack(false) // multiple
		}
		if ch, err = pr.giveBack(ctx, ch, d, way); err != nil {
			return r, err
		}
	}
	return r, nil
}

// giveBack returns d to its queue way; closing the channel takes a new
// one, which it returns.
func (pr *Probes) giveBack(ctx context.Context, ch *amqp.Channel, d amqp.Delivery, way Return) (*amqp.Channel, error) {
	switch way {
	case NackRequeue:
		return ch, d.Nack(false, true) // multiple, requeue
	case RejectRequeue:
		return ch, d.Reject(true) // requeue
	}
	_ = ch.Close() // the unacked delivery goes back to the queue
	return pr.s.link.channel(ctx)
}

// Limit measures the delivery limit a quorum queue declared without
// x-delivery-limit gets (the broker's default) against one way of giving
// a message back: one message taken and given back way up to max times.
// It returns how many deliveries the message had and whether the queue
// then dropped it (gone) or still holds it after max returns.
func (pr *Probes) Limit(ctx context.Context, way Return, max int) (deliveries int, gone bool, err error) {
	queue := LimitQueue(way)
	ch, err := pr.probeQueue(ctx, queue)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = ch.Close() }()
	for deliveries < max {
		d, err := getOne(ctx, ch, pr.s.Names.Of(queue))
		if errors.Is(err, errNotBack) {
			return deliveries, true, nil
		}
		if err != nil {
			return deliveries, false, err
		}
		deliveries++
		if ch, err = pr.giveBack(ctx, ch, d, way); err != nil {
			return deliveries, false, err
		}
	}
	d, err := getOne(ctx, ch, pr.s.Names.Of(queue)) // still there after max returns?
	if errors.Is(err, errNotBack) {
		return deliveries, true, nil
	}
	if err != nil {
		return deliveries, false, err
	}
	return deliveries, false, d.Ack(false) // multiple
}

// probeQueue declares seed queue name as a quorum queue of the run,
// publishes one message of the run into it with a confirm, and opens a
// channel to read it.
func (pr *Probes) probeQueue(ctx context.Context, name string) (*amqp.Channel, error) {
	q := flow.Queue{Name: name, Role: flow.Work, Quorum: true}
	if err := pr.s.topo.Declare(ctx, flow.Topology{Queues: []flow.Queue{q}}); err != nil {
		return nil, err
	}
	p, err := pr.s.Publisher(ctx)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Publish(ctx, name, name, nil); err != nil {
		return nil, err
	}
	return pr.s.link.channel(ctx)
}

// probePoll is how often getOne asks again for a message not yet back:
// a returned message is ready again within milliseconds.
const probePoll = 20 * time.Millisecond

// errNotBack means a message given back did not come back within
// probeWait: the queue dropped it (or dead-lettered it).
var errNotBack = errors.New("the message did not come back")

// probeWait bounds the wait for a message given back to be ready again.
const probeWait = 2 * time.Second

// getOne takes the one message of queue with basic.get, waiting up to
// probeWait for a returned one to be ready again.
func getOne(ctx context.Context, ch *amqp.Channel, queue string) (amqp.Delivery, error) {
	for range probeWait / probePoll {
		d, ok, err := ch.Get(queue, false) // autoAck
		if err != nil || ok {
			return d, err
		}
		select {
		case <-time.After(probePoll):
		case <-ctx.Done():
			return d, ctx.Err()
		}
	}
	return amqp.Delivery{}, fmt.Errorf("%s: %w within %v", queue, errNotBack, probeWait)
}

// counterOr is header key of h, or -1 without it.
func counterOr(h amqp.Table, key string) int64 {
	if n, ok := HeaderCount(h, key); ok {
		return n
	}
	return -1
}

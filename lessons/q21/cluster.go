package q21

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/cluster"
)

// runner is one run of the lesson on one cluster: what it declared (to
// delete at the end) and the node it stopped (to revive).
type runner struct {
	env   *lesson.Env
	c     *cluster.Cluster
	names rabbit.Names

	mu       sync.Mutex
	declared []string // queues, in the order declared
	exchs    []string
	killed   string // short name of the node stopped and not yet revived

	act <-chan lesson.Act // the student's keys (Options.Act); nil: the run stops the node itself
}

// The queues of the later parts, by their seed-style names.
const (
	latencyClassic = "q21.latency.classic"
	latencyQuorum  = "q21.latency.quorum"
	probeQueue     = "q21.leader.probe"
	limitDLX       = "q21.limit.dlx"    // delivery limit, dead-letters to the seed's DLQ
	limitNoDLX     = "q21.limit.nodlx"  // delivery limit, no dead-letter exchange
	mostSource     = "q21.most.source"  // at-most-once dead-lettering (the default)
	mostTarget     = "q21.most.target"  // its full target
	leastSource    = "q21.least.source" // at-least-once dead-lettering
	leastTarget    = "q21.least.target" // its full target
)

var extraQueues = []string{latencyClassic, latencyQuorum, probeQueue, limitDLX, limitNoDLX,
	mostSource, mostTarget, leastSource, leastTarget}

// Bounds on the lesson's waits, in real time.
const (
	connectBound = 90 * time.Second // reaching a live node after one died
	settleBound  = 3 * time.Minute  // every message sent and acked after the kill
	nodeBound    = 3 * time.Minute  // stopping or reviving a node
	quiet        = 1500 * time.Millisecond
)

// conn is one connection of the lesson's and the node it reached.
type conn struct {
	*amqp.Connection
	node cluster.NodeSpec
}

// connect dials the cluster's nodes in order from node index first, and
// again until one answers or connectBound passes: while a node stops it
// may still accept a connection and then close it.
func (r *runner) connect(ctx context.Context, first int) (conn, error) {
	var c conn
	var last error
	ok, err := rabbit.PollUntil(ctx, 200*time.Millisecond, connectBound, func() (bool, error) {
		for i := range r.c.Nodes {
			n, err := r.dial(ctx, r.c.Nodes[(first+i)%len(r.c.Nodes)])
			if err == nil {
				c = n
				return true, nil
			}
			last = err
		}
		return false, nil
	})
	if err == nil && !ok {
		err = fmt.Errorf("no node of the cluster answered within %s: %v", connectBound, last)
	}
	return c, err
}

// channel connects as connect does and opens a channel, in confirm mode
// when confirm is set (each publish then waits for its confirm, see
// confirmed). Closing the connection closes the channel.
func (r *runner) channel(ctx context.Context, first int, confirm bool) (conn, *amqp.Channel, error) {
	c, err := r.connect(ctx, first)
	if err != nil {
		return conn{}, nil, err
	}
	ch, err := c.Channel()
	if err == nil && confirm {
		err = ch.Confirm(false) // noWait
	}
	if err != nil {
		c.Close()
		return conn{}, nil, err
	}
	return c, ch, nil
}

// index is node n's place in the cluster's list.
func (r *runner) index(n cluster.NodeSpec) int {
	for i, x := range r.c.Nodes {
		if x.Name == n.Name {
			return i
		}
	}
	return 0
}

// queue declares queue (a seed-style name, prefixed here) with args on
// ch and records it for the clean-up. Every queue is durable: a quorum
// queue must be.
func (r *runner) queue(ch *amqp.Channel, name string, args amqp.Table) error {
	_, err := ch.QueueDeclare(r.names.Of(name),
		true,  // durable
		false, // autoDelete
		false, // exclusive
		false, // noWait
		args)
	if err != nil {
		return fmt.Errorf("declaring %s: %w", r.names.Of(name), err)
	}
	r.mu.Lock()
	r.declared = append(r.declared, r.names.Of(name))
	r.mu.Unlock()
	return nil
}

// exchange declares a durable exchange and records it.
func (r *runner) exchange(ch *amqp.Channel, name, kind string) error {
	err := ch.ExchangeDeclare(r.names.Of(name), kind,
		true,  // durable
		false, // autoDelete
		false, // internal
		false, // noWait
		nil)
	if err != nil {
		return fmt.Errorf("declaring exchange %s: %w", r.names.Of(name), err)
	}
	r.mu.Lock()
	r.exchs = append(r.exchs, r.names.Of(name))
	r.mu.Unlock()
	return nil
}

// cleanup revives the node the run stopped, if it is still stopped, and
// deletes every queue and exchange the run declared, whatever happened to
// ctx; each within its bound.
func (r *runner) cleanup(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if err := r.revive(ctx); err != nil {
		r.env.Log().Warn("q21: reviving the stopped node", "err", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := r.connect(dctx, 0)
	if err != nil {
		r.env.Log().Warn("q21: deleting the run's queues", "err", err)
		return
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.declared {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil { // ifUnused, ifEmpty, noWait
			r.env.Log().Warn("q21: deleting a queue", "queue", q, "err", err)
			if ch, err = c.Channel(); err != nil {
				return
			}
		}
	}
	for _, x := range r.exchs {
		_ = ch.ExchangeDelete(x, false, false) // ifUnused, noWait
	}
	r.declared, r.exchs = nil, nil
}

// kill stops node n's application (rabbitmqctl stop_app) and remembers it
// for revive; it returns how long the stop took.
func (r *runner) kill(ctx context.Context, n cluster.NodeSpec) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeBound)
	defer cancel()
	r.mu.Lock()
	r.killed = n.Short
	r.mu.Unlock()
	begin := time.Now()
	err := r.c.Kill(ctx, n.Short)
	return time.Since(begin), err
}

// revive starts the node kill stopped, if any, and waits until it
// accepts connections.
func (r *runner) revive(ctx context.Context) error {
	r.mu.Lock()
	n := r.killed
	r.mu.Unlock()
	if n == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, nodeBound)
	defer cancel()
	if err := r.c.Revive(ctx, n); err != nil {
		return err
	}
	r.mu.Lock()
	r.killed = ""
	r.mu.Unlock()
	return nil
}

// depth is how many messages are ready in queue (a passive declare).
func depth(ch *amqp.Channel, queue string) (int, error) {
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil) // durable, autoDelete, exclusive, noWait
	if err != nil {
		return 0, err
	}
	return q.Messages, nil
}

// confirmed publishes body to exchange with key on a confirming channel
// and waits for the broker's confirm; a nack is an error.
func confirmed(ctx context.Context, ch *amqp.Channel, exchange, key, body string) error {
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key,
		false, // mandatory
		false, // immediate
		amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte(body)})
	if err != nil {
		return err
	}
	ok, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return err
	case !ok:
		return errNacked
	}
	return nil
}

var errNacked = errors.New("the broker nacked the publish")

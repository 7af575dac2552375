package q21

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// worker is one of the seed's workers: a connection to one node, a
// channel with prefetch 5 and manual acks, and the store's check before
// each send. When its connection dies it reconnects at its pace: as
// amqp-connection-manager does for the seed (reconnect.go), or with the
// lab's fast loop.
type worker struct {
	r      *runner
	name   string
	first  int // the node it tries first
	pace   pacing
	shared *shared

	mu          sync.Mutex
	nodes       []string  // the nodes it consumed from, in order
	live        bool      // consuming now
	lostAt      time.Time // its connection died
	backAt      time.Time // it consumed again, on another node
	deliveries  int
	redelivered int
	absorbed    int
	sending     int // copies whose row was SENDING: the worker that claimed it still sending
	sentHere    int
	ackLost     int // acks that went down with the connection
}

// run consumes until ctx ends, reconnecting after each loss at its pace.
func (w *worker) run(ctx context.Context) {
	if w.pace.wait > 0 {
		w.runPaced(ctx)
		return
	}
	for ctx.Err() == nil {
		c, err := w.r.connect(ctx, w.first)
		if err != nil {
			w.r.env.Log().Warn("q21: worker cannot reconnect", "worker", w.name, "err", err)
			return
		}
		w.consume(ctx, c)
		c.Close()
		w.first = w.r.index(c.node) + 1  // the node it was on is the likely dead one
		pause(ctx, 200*time.Millisecond) // a node that refuses the consume is not asked again at once
	}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// consume serves deliveries on c until its connection or ctx ends. It
// reports whether it consumed at all (a node without a leader for the
// queue refuses the consume).
func (w *worker) consume(ctx context.Context, c conn) (consumed bool) {
	ch, err := c.Channel()
	if err != nil {
		return false
	}
	if err := ch.Qos(Prefetch, 0, false); err != nil { // prefetchSize, global
		return false
	}
	deliveries, err := ch.ConsumeWithContext(ctx, w.r.names.Of(birthday.Queue), w.name,
		false, // autoAck: the seed acks by hand
		false, // exclusive
		false, // noLocal
		false, // noWait
		nil)
	if err != nil {
		return false // no leader yet, or the node is going: reconnect
	}
	closed := c.NotifyClose(make(chan *amqp.Error, 1))
	gone := make(chan struct{}) // closed with the connection, however it ends
	go func() {
		defer close(gone)
		if e := <-closed; e != nil && ctx.Err() == nil { // nil: this worker closed it
			w.count(func() {
				if w.lostAt.IsZero() {
					w.lostAt = time.Now()
				}
			})
		}
	}()
	w.mu.Lock()
	w.nodes = append(w.nodes, c.node.Short)
	w.live = true
	back := !w.lostAt.IsZero() && w.backAt.IsZero()
	if back {
		w.backAt = time.Now()
	}
	outage := w.outage()
	w.mu.Unlock()
	if back { // the TUI's status line follows it
		w.r.env.Log().Info(fmt.Sprintf("q21: %s reconnected: it consumes again, on %s, %s (lesson "+
			"time) after its connection died", w.name, c.node.Short, secs(outage)))
	}
	faults := lab.FaultsFrom(ctx)
	for d := range deliveries {
		release := faults.AddHolder(fmt.Sprintf("%s's channel on %s, holding %s unacked", w.name, c.node.Short, d.Body),
			func() { _ = ch.Close() }) // the TUI's c: the broker requeues it
		w.handle(ctx, c.node, gone, d)
		release()
	}
	w.count(func() { w.live = false })
	return true
}

// handle is the seed's MessageWorker.process: claim the row (the
// idempotency check), send, mark SENT, ack. A redelivered copy of a
// message already SENT is acked without a send: the store absorbs it.
func (w *worker) handle(ctx context.Context, on cluster.NodeSpec, gone <-chan struct{}, d amqp.Delivery) {
	id := string(d.Body)
	attempt := w.shared.attempt(id)
	w.count(func() { w.deliveries++ })
	if d.Redelivered {
		w.count(func() { w.redelivered++ })
		w.r.env.Stream.Emit(lab.Event{Kind: lab.Redelivered, Task: id, Queue: birthday.Queue, Actor: w.name,
			Note: fmt.Sprintf("redelivered to %s on %s%s", w.name, on.Short, deliveryCount(d))})
	}
	won, err := w.shared.db.Claim(ctx, id)
	if err != nil {
		w.r.env.Log().Warn("q21: claim", "task", id, "err", err)
		_ = d.Nack(false, true) // multiple, requeue
		return
	}
	if !won {
		if w.awaitSent(ctx, id) {
			w.count(func() { w.absorbed++ })
			w.r.env.Stream.Emit(lab.Event{Kind: lab.Duplicate, Task: id, Queue: birthday.Queue, Actor: w.name,
				Note: "the store says SENT: acked, not sent again"})
		}
		w.ack(ctx, on, gone, d)
		return
	}
	e := lab.Event{Task: id, Queue: birthday.Queue, Actor: w.name, Attempt: attempt}
	err = w.r.env.Stream.Attempt(e, func() error {
		if err := w.r.env.Stream.Clock().Wait(ctx, sendTime); err != nil {
			return err
		}
		w.shared.sent(id)
		w.count(func() { w.sentHere++ })
		return w.shared.db.MarkSent(ctx, id)
	})
	if err != nil {
		return // ctx ended: the run is over
	}
	w.shared.report(id)
	w.ack(ctx, on, gone, d)
}

// ack acks d, received on node on; an ack on a connection that died is
// lost, and the broker redelivers the message. While the lesson stops
// the leader's node, a worker on that node holds the ack until stop_app
// has returned (shared.stopping) or its connection is gone: the node goes
// down holding it. Not longer: the worker must see its connection close
// when it closes, as amqp-connection-manager does, or its time without a
// node would count the lab's hold (stop_app and the leader lookup after
// it, some 15 s real on a busy machine).
func (w *worker) ack(ctx context.Context, on cluster.NodeSpec, gone <-chan struct{}, d amqp.Delivery) {
	select {
	case <-w.shared.stopping:
		if on.Short == w.shared.leader {
			select {
			case <-w.shared.stopped:
			case <-gone:
			case <-ctx.Done():
			}
		}
	default:
	}
	if err := d.Ack(false); err != nil { // multiple
		w.count(func() { w.ackLost++ })
	}
}

// awaitSent waits (bounded) for a row another worker claimed to be SENT:
// a redelivered copy can arrive while the worker that lost its
// connection is still sending. So SENDING on a redelivery does not mean
// its worker died, as Q20's resend rule reads it: resending here would
// send twice. It reports whether the row is SENT and the send's attempt
// has said so in the stream: the absorbed copy's event comes after the
// send's (on a busy machine one came between the sender's MarkSent and
// its succeeded event, and the stream showed M17 absorbed before sent).
func (w *worker) awaitSent(ctx context.Context, id string) bool {
	deadline := time.Now().Add(30 * time.Second)
	for first := true; time.Now().Before(deadline); first = false {
		row, err := w.shared.db.Get(ctx, id)
		if err != nil {
			return false
		}
		if row.Status == store.Sent && w.shared.isReported(id) {
			return true
		}
		if first && row.Status == store.Sending {
			w.count(func() { w.sending++ })
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

// outage is the lesson time from the loss of its connection to its
// consuming again, 0 until both happened; w.mu is held.
func (w *worker) outage() time.Duration {
	if w.lostAt.IsZero() || w.backAt.IsZero() {
		return 0
	}
	return w.r.env.Stream.Clock().Lesson(w.backAt.Sub(w.lostAt))
}

func (w *worker) count(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

func (w *worker) consuming() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live
}

// nodeNow is the node the worker consumes from now (or last did).
func (w *worker) nodeNow() cluster.NodeSpec {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.nodes) == 0 {
		return w.r.c.Nodes[w.first%len(w.r.c.Nodes)]
	}
	n, _ := w.r.c.Node(w.nodes[len(w.nodes)-1])
	return n
}

// deliveryCount is ", x-delivery-count N" when the quorum queue set it.
func deliveryCount(d amqp.Delivery) string {
	if n, ok := d.Headers["x-delivery-count"]; ok {
		return fmt.Sprintf(", x-delivery-count %v", n)
	}
	return ""
}

// probe publishes to a quorum queue led by the same node, each publish
// confirmed before the next, from a connection to another node: the
// longest wait for a confirm is how long the client saw no leader.
type probe struct {
	r     *runner
	first int

	mu        sync.Mutex
	confirmed []time.Time
}

func (p *probe) run(ctx context.Context) {
	for ctx.Err() == nil {
		c, err := p.r.connect(ctx, p.first)
		if err != nil {
			return
		}
		p.publish(ctx, c)
		c.Close()
		p.first = p.r.index(c.node) + 1
		pause(ctx, 20*time.Millisecond)
	}
}

// publish publishes until ctx ends or the channel fails.
func (p *probe) publish(ctx context.Context, c conn) {
	ch, err := c.Channel()
	if err != nil {
		return
	}
	if err := ch.Confirm(false); err != nil { // noWait
		return
	}
	for ctx.Err() == nil {
		err := confirmed(ctx, ch, "", p.r.names.Of(probeQueue), "probe")
		switch {
		case errors.Is(err, errNacked): // no leader took it: not a confirm, try again
		case err != nil:
			return
		default:
			p.mu.Lock()
			p.confirmed = append(p.confirmed, time.Now())
			p.mu.Unlock()
		}
		pause(ctx, 20*time.Millisecond)
	}
}

// longestGap is the longest time between two confirms in a row (less
// the probe's own 20 ms pause) and how many publishes were confirmed.
func (p *probe) longestGap() (time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gaps := make([]time.Duration, 0, len(p.confirmed))
	for i := 1; i < len(p.confirmed); i++ {
		gaps = append(gaps, p.confirmed[i].Sub(p.confirmed[i-1])-20*time.Millisecond)
	}
	if len(gaps) == 0 {
		return 0, len(p.confirmed)
	}
	return slices.Max(gaps), len(p.confirmed)
}

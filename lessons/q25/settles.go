package q25

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/lessons/q19"
	"github.com/queuelab/qlab/rabbit"
)

// Part (b): one message per retry type and settle, each on a queue of its
// own, failed settleFailures times and handed back the same way each
// time, then acked: the waits between its deliveries say which settles
// each type delays, and whether the delay grows.

// The delays of part (b)'s queues (lesson time): a minimum far above how
// long a message put back at once takes to come back (at the tests' 10×,
// 400 ms real against up to 234 ms measured on a machine with a load of
// 27), and a maximum the three waits never reach.
const (
	settleLo       = 4 * time.Second
	settleHi       = 16 * time.Second
	settleFailures = 3
)

// cell is one retry type and one settle of part (b).
type cell struct {
	retryType string
	settle    Settle
	waits     []time.Duration // measured: each failure's settle to the next delivery
	counts    []int           // x-delivery-count of each delivery
}

func (c *cell) task() string  { return c.retryType + "-" + string(c.settle) }
func (c *cell) queue() string { return settlePrefix + c.retryType + "." + string(c.settle) }

// settleView is the one queue the nine cells' events name: a viewer (the
// TUI) draws a box per queue an event names, and nine would not fit a
// screen; the task's id says which queue of the nine it is on.
const settleView = "birthday.messages.settle.*"

// cells are part (b)'s nine, in table order.
func cells() []*cell {
	var out []*cell
	for _, s := range []Settle{Nack, Reject, Close} {
		for _, t := range []string{TypeAll, TypeFailed, TypeReturned} {
			out = append(out, &cell{retryType: t, settle: s})
		}
	}
	return out
}

// settles is part (b): the nine cells at once.
func settles(ctx context.Context, env *lesson.Env) ([]*cell, error) {
	env.Phase(fmt.Sprintf("(b) Which settle is delayed: each retry type × nack, reject, a closed "+
		"channel; %d failures each, x-delayed-retry-min %s, max %s", settleFailures, dur(settleLo), dur(settleHi)))
	s, err := rabbitenv.Session(ctx, env)
	if err != nil {
		return nil, err
	}
	defer rabbitenv.CloseSession(ctx, env, s)
	clock := env.Stream.Clock()
	cs := cells()
	for _, c := range cs {
		args := Arguments(c.retryType, clock.Real(settleLo), clock.Real(settleHi), DeliveryLimit, "")
		if err := s.Topo().DeclareArgs(ctx, c.queue(), args); err != nil {
			return nil, fmt.Errorf("declaring %s: %w", s.Names.Of(c.queue()), err)
		}
	}
	conn, err := s.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	pub, err := s.Publisher(ctx)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = runCell(ctx, env, s, conn, pub, c) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return cs, err
	}
	env.Report(settleTable(cs))
	return cs, nil
}

// cellBound bounds the wait for one delivery of a cell (real time).
func cellBound(clock lab.Clock) time.Duration { return clock.Real(4*settleHi) + 10*time.Second }

// runCell publishes c's message, fails and hands back its first
// settleFailures deliveries as c says, and acks the next.
func runCell(ctx context.Context, env *lesson.Env, s *rabbit.Session, conn *amqp.Connection,
	pub *rabbit.Publisher, c *cell) error {
	clock, queue := env.Stream.Clock(), s.Names.Of(c.queue())
	ch, deliveries, err := consumeOn(ctx, conn, queue, "Worker", 1)
	if err != nil {
		return err
	}
	defer func() {
		if ch == nil { // a re-consume after a close failed (a run stopped early)
			return
		}
		// Not waited on: a run stopped early cancels the consumer, and the
		// broker did not answer that channel's close for 9 minutes once
		// (4.3.6, TestEverySpeed); settles closes the connection next,
		// which ends this close too.
		last := ch
		go func() { _ = last.Close() }()
	}()
	env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: c.task(), Queue: settleView, Actor: "Producer",
		Note: "to " + c.queue()})
	if err := pub.Publish(ctx, c.queue(), c.task(), nil); err != nil {
		return err
	}
	var handedBack time.Duration
	for n := 1; n <= settleFailures+1; n++ {
		var d amqp.Delivery
		select {
		case got, ok := <-deliveries:
			if !ok {
				return fmt.Errorf("%s: the consumer's channel closed", queue)
			}
			if !s.Guest().Screen(ctx, c.queue(), got) {
				n-- // not the run's message: parked, and no attempt of the cell
				continue
			}
			d = got
		case <-time.After(cellBound(clock)):
			return fmt.Errorf("%s: delivery %d did not come within %v", queue, n, cellBound(clock))
		case <-ctx.Done():
			return ctx.Err()
		}
		if n > 1 {
			c.waits = append(c.waits, clock.Elapsed()-handedBack)
		}
		count := headerInt(d.Headers, "x-delivery-count")
		c.counts = append(c.counts, count)
		e := lab.Event{Task: c.task(), Queue: settleView, Actor: "Worker", Attempt: n}
		err := env.Stream.Attempt(e, func() error {
			if err := clock.Wait(ctx, q19.SendTime); err != nil {
				return err
			}
			if n <= settleFailures {
				return errFailing
			}
			return nil
		})
		if err == nil {
			return d.Ack(false) // multiple
		}
		after := count
		if c.settle.Counts() {
			after++
		}
		wait := BrokerDelay(c.retryType, c.settle, after, settleLo, settleHi)
		env.Stream.Emit(handBackEvent(c, after, wait, rabbit.ServerVersion(s.Connection())))
		if ch, deliveries, err = settleCell(ctx, conn, queue, ch, deliveries, d, c.settle, func() {
			handedBack = clock.Elapsed()
		}); err != nil {
			return err
		}
	}
	return nil
}

// handBackEvent says what the broker (of version) does with c's message,
// handed back with a delivery count of after: hold it, or put it back at
// once, and where it goes back.
func handBackEvent(c *cell, after int, wait time.Duration, version string) lab.Event {
	how := "basic." + string(c.settle) + ", requeue"
	if c.settle == Close {
		how = "the channel closed with it unacked"
	}
	e := lab.Event{Task: c.task(), Queue: settleView, To: settleView, Actor: "broker"}
	if wait == 0 {
		e.Kind = lab.Moved
		e.Note = fmt.Sprintf("%s (x-delivery-count %d): type %s does not delay it, %s",
			how, after, c.retryType, backPlace(wait, version))
		return e
	}
	e.Kind, e.DelayMs = lab.Scheduled, wait.Milliseconds() // no Via: no wait queue, the queue itself holds it
	e.Note = fmt.Sprintf("%s (x-delivery-count %d): %s", how, after, backPlace(wait, version))
	return e
}

// backPlace is how long a quorum queue on a broker of version holds a
// message handed back, and where it goes then. The lesson's queues
// declare x-delivery-limit, which on 3.x decides the place; after a wait
// it is the same as at once (TestHeldPlaceIsMeasured).
func backPlace(wait time.Duration, version string) string {
	place := rabbit.RequeuePlace(true, true, version) // quorum, x-delivery-limit
	if wait == 0 {
		return place
	}
	return "held " + dur(wait) + ", then " + place
}

// settleCell hands d back with s, calling now just before it leaves (the
// wait is timed from there). A closed channel returns every delivery
// unacked on it, so for Close a new channel's consumer is ready first:
// opening it is not part of the wait.
func settleCell(ctx context.Context, conn *amqp.Connection, queue string, ch *amqp.Channel,
	deliveries <-chan amqp.Delivery, d amqp.Delivery, s Settle, now func()) (*amqp.Channel, <-chan amqp.Delivery, error) {
	switch s {
	case Nack:
		now()
		return ch, deliveries, d.Nack(false, true) // multiple, requeue
	case Reject:
		now()
		return ch, deliveries, d.Reject(true) // requeue
	}
	next, nextDeliveries, err := consumeOn(ctx, conn, queue, "Worker", 1)
	if err != nil {
		return ch, deliveries, err
	}
	now()
	_ = ch.Close()
	return next, nextDeliveries, nil
}

// consumeOn consumes queue on a channel of its own with manual acks, at
// most prefetch deliveries unsettled; the consumer ends with ctx.
func consumeOn(ctx context.Context, conn *amqp.Connection, queue, tag string, prefetch int) (*amqp.Channel, <-chan amqp.Delivery, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, nil, err
	}
	if err := ch.Qos(prefetch, 0, false); err != nil { // prefetchCount, prefetchSize, global
		_ = ch.Close()
		return nil, nil, err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, queue, tag,
		false, // autoAck
		false, // exclusive
		false, // noLocal
		false, // noWait
		nil)
	if err != nil {
		_ = ch.Close()
		return nil, nil, err
	}
	return ch, deliveries, nil
}

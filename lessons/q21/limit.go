package q21

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/birthday"
)

// DeliveryLimit is part 3's x-delivery-limit: small, so the loop ends soon.
const DeliveryLimit = 2

// poison is one message part 3 requeues again and again.
type poison struct {
	task, queue string
	dlx         bool
	counts      []string // x-delivery-count on each delivery ("-" when absent)
	end         string   // where it ended, as measured
	guarded     bool     // the lab's guard took it: the broker never stopped it
}

// deliveryLimit is part 3: a consumer that can never process a message
// rejects it with requeue; the quorum queue counts the deliveries in
// x-delivery-count and, past x-delivery-limit, dead-letters it (P1, to
// the seed's DLQ) or, with no dead-letter exchange, drops it (P2).
//
// basic.reject, not basic.nack: RabbitMQ 4.3 counts only a failed
// delivery toward the limit, and a nack with requeue is none (a plain
// return, unlimited); 3.10.8 counts both (versions.QuorumReturns).
func (r *runner) deliveryLimit(ctx context.Context) error {
	r.env.Phase(fmt.Sprintf("The delivery limit: x-delivery-limit %d, a consumer that requeues "+
		"every delivery (P1 with a dead-letter exchange, P2 without)", DeliveryLimit))
	c, ch, err := r.channel(ctx, 0, true)
	if err != nil {
		return err
	}
	defer c.Close()
	version := rabbit.ServerVersion(c.Connection)
	ps := []*poison{{task: "P1", queue: limitDLX, dlx: true}, {task: "P2", queue: limitNoDLX}}
	for _, p := range ps {
		args := amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": DeliveryLimit}
		if p.dlx {
			args["x-dead-letter-exchange"] = r.names.Of(birthday.DLX)
			args["x-dead-letter-routing-key"] = birthday.DLQKey
		}
		if err := r.queue(ch, p.queue, args); err != nil {
			return err
		}
	}
	for _, p := range ps {
		r.env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: p.task, Queue: p.queue, Actor: Scheduler})
		if err := confirmed(ctx, ch, "", r.names.Of(p.queue), p.task); err != nil {
			return err
		}
	}
	for _, p := range ps {
		if err := r.requeueLoop(ctx, ch, p); err != nil {
			return err
		}
	}
	for _, p := range ps {
		if err := r.whereDidItGo(ctx, ch, p); err != nil {
			return err
		}
	}
	r.env.Report(limitTable(ps, version))
	return nil
}

// limitGuard is how many deliveries past the limit requeueLoop allows
// before it stops: a broker that does not count them would loop for ever.
const limitGuard = 3

// requeueLoop consumes p's queue, rejecting every delivery with requeue,
// until none has come for quiet, or the guard stops it.
func (r *runner) requeueLoop(ctx context.Context, ch *amqp.Channel, p *poison) error {
	deliveries, err := ch.ConsumeWithContext(ctx, r.names.Of(p.queue), "poison-"+p.task,
		false, // autoAck
		false, // exclusive
		false, // noLocal
		false, // noWait
		nil)
	if err != nil {
		return err
	}
	defer ch.Cancel("poison-"+p.task, false) // noWait
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return errors.New("the channel closed while requeueing")
			}
			count := "-"
			if n, ok := d.Headers["x-delivery-count"]; ok {
				count = fmt.Sprint(n)
			}
			p.counts = append(p.counts, count)
			e := lab.Event{Task: p.task, Queue: p.queue, Actor: "Poison-Worker", Attempt: len(p.counts)}
			_ = r.env.Stream.Attempt(e, func() error {
				return fmt.Errorf("cannot process it: reject, requeue (x-delivery-count %s)", count)
			})
			if len(p.counts) > DeliveryLimit+limitGuard {
				p.guarded = true
				return d.Ack(false) // multiple: the guard takes it away
			}
			if err := d.Reject(true); err != nil { // requeue
				return err
			}
		case <-time.After(quiet):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// whereDidItGo looks for p where the broker may have put it: still in its
// queue, in the seed's DLQ (with x-death's reason), or nowhere.
func (r *runner) whereDidItGo(ctx context.Context, ch *amqp.Channel, p *poison) error {
	if p.guarded {
		p.end = fmt.Sprintf("taken away by the lab's guard after %d deliveries: the broker never stopped it", len(p.counts))
		r.env.Stream.Emit(lab.Event{Kind: lab.Dropped, Task: p.task, Queue: p.queue, Actor: "lab", Note: p.end})
		return nil
	}
	left, err := depth(ch, r.names.Of(p.queue))
	if err != nil {
		return err
	}
	if left > 0 {
		p.end = fmt.Sprintf("still in %s", p.queue)
		r.env.Stream.Emit(lab.Event{Kind: lab.Stranded, Task: p.task, Queue: p.queue, Actor: "lab",
			Note: "still queued after the requeue loop stopped"})
		return nil
	}
	d, ok, err := ch.Get(r.names.Of(birthday.DLQ), false) // autoAck
	if err != nil {
		return err
	}
	if ok && string(d.Body) == p.task {
		reason := xDeathReason(d.Headers)
		p.end = fmt.Sprintf("dead-lettered to %s (x-death reason %s)", birthday.DLQ, reason)
		r.env.Stream.Emit(lab.Event{Kind: lab.DeadLettered, Task: p.task, Queue: p.queue, To: birthday.DLQ,
			Actor: "broker", Note: fmt.Sprintf("past x-delivery-limit %d; x-death reason %s", DeliveryLimit, reason)})
		return d.Ack(false) // multiple
	}
	if ok {
		_ = d.Nack(false, true) // multiple, requeue: not this one
	}
	p.end = "dropped by the broker"
	r.env.Stream.Emit(lab.Event{Kind: lab.Dropped, Task: p.task, Queue: p.queue, Actor: "broker",
		Note: fmt.Sprintf("past x-delivery-limit %d with no dead-letter exchange: removed", DeliveryLimit)})
	return nil
}

// xDeathReason is the reason of the first x-death entry, "-" if none.
func xDeathReason(h amqp.Table) string {
	deaths, _ := h["x-death"].([]any)
	if len(deaths) == 0 {
		return "-"
	}
	first, _ := deaths[0].(amqp.Table)
	if reason, ok := first["reason"].(string); ok {
		return reason
	}
	return "-"
}

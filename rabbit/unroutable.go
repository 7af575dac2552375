package rabbit

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Unroutable is what the broker answered to a message no queue took.
type Unroutable struct {
	Confirmed   bool   // the publisher confirm was an ack: "the broker has it"
	Returned    bool   // a basic.return came back (only a mandatory publish gets one)
	ReplyCode   uint16 // the return's code: 312 NO_ROUTE
	ReplyText   string // the return's text
	QueueExists bool   // the queue exists after the publish
}

// PublishUnroutable publishes task's message to seed queue queue, which
// must not exist, through the default exchange: the NestJS email service's
// sendToQueue('email_queue_dlq') when nobody declared that queue. It uses a
// confirm channel of its own with mandatory as given (PublishWatched),
// then checks that the queue still does not exist. It refuses when the
// queue exists: the message would land in someone's queue.
func (pr *Probes) PublishUnroutable(ctx context.Context, queue, task string, mandatory bool) (Unroutable, error) {
	name := pr.s.Names.Of(queue)
	if exists, err := pr.s.link.exists(ctx, name); err != nil || exists {
		return Unroutable{}, fmt.Errorf("queue %s must not exist for this demonstration (exists %v, err %v)", name, exists, err)
	}
	u, err := pr.PublishWatched(ctx, "", name, task, mandatory)
	if err != nil {
		return u, fmt.Errorf("publishing %s to the undeclared %s: %w", task, name, err)
	}
	u.QueueExists, err = pr.s.link.exists(ctx, name)
	return u, err
}

// PublishWatched publishes task's message (stamped with the run's id) to
// broker exchange exchange ("" is the default) with routing key key, once,
// on a confirm channel of its own with mandatory as given, and reports
// what the broker answered: the confirm, and a basic.return if one came
// (Channel.NotifyReturn). Unlike Publisher's one path it never publishes
// again: what one publish gets back is what it shows (Q13's and Q17's
// undeclared queue, Q18's key nothing matches). A connection lost on the
// way is dialled again (OnConnection).
//
// amqp091-go hands a basic.return to the NotifyReturn channel before it
// processes the confirm that follows it on the same channel, so once the
// confirm is in, a return for the message is already in the channel.
func (pr *Probes) PublishWatched(ctx context.Context, exchange, key, task string, mandatory bool) (Unroutable, error) {
	// The answer comes back through withinValue: a publish abandoned at
	// its bound must not write what this function returns.
	var u Unroutable
	err := pr.s.OnConnection(ctx, "publishing "+task+" once", func(conn *amqp.Connection) (err error) {
		u, err = withinValue(ctx, func() (u Unroutable, err error) {
			ch, err := conn.Channel()
			if err != nil {
				return u, err
			}
			defer ch.Close()
			if err := ch.Confirm(false /* noWait */); err != nil {
				return u, err
			}
			returns := ch.NotifyReturn(make(chan amqp.Return, 1))
			msg := Publishing(task, nil)
			Stamp(&msg, pr.s.Names)
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, mandatory, false /* immediate */, msg)
			if err != nil {
				return u, err
			}
			if u.Confirmed, err = dc.WaitContext(ctx); err != nil {
				return u, err
			}
			select {
			case r := <-returns:
				u.Returned, u.ReplyCode, u.ReplyText = true, r.ReplyCode, r.ReplyText
			default:
			}
			return u, nil
		})
		return err
	})
	return u, err
}

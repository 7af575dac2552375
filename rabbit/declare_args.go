package rabbit

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// DeclareArgs declares seed queue name as a durable queue with exactly
// args, for an argument a flow.Topology has no field for (Q25's quorum queue
// with x-delayed-retry-*). Like Declare it refuses a queue that already
// exists (an *ExistsError: the run did not create it) and remembers the
// one it creates, or may have created (mayExist), for Close. A refusal of
// the broker's for the arguments themselves (406 PRECONDITION_FAILED for
// a value it does not take) comes back as the *amqp.Error the broker
// sent, so the caller can show its words.
func (tp *Topo) DeclareArgs(ctx context.Context, name string, args amqp.Table) error {
	if err := tp.s.guest.claim(ctx); err != nil {
		return err
	}
	broker := tp.s.Names.Of(name)
	exists, err := tp.s.link.exists(ctx, broker)
	if err != nil {
		return fmt.Errorf("checking queue %s: %w", broker, err)
	}
	if exists {
		return &ExistsError{Queues: []string{broker}}
	}
	err = tp.s.OnConnection(ctx, "declaring "+broker, func(conn *amqp.Connection) error {
		return onChannel(ctx, conn, func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare(broker,
				true,  // durable
				false, // autoDelete
				false, // exclusive
				false, // noWait
				args)
			return err
		})
	})
	if mayExist(err) {
		tp.own(broker)
	}
	return err
}

package rabbit

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
)

// A killed run cannot delete its queues, and AMQP cannot list a broker's
// queues. What the lab can do is ask for the names it would have
// declared: Clean passively declares each queue and exchange of the given
// topologies under a prefix and deletes the ones that exist. A manifest
// written on the broker at declare time would be one more thing a killed
// run leaves behind; the names come from the topologies the lessons
// declare, so they cannot drift from them.

// CleanResult is what Clean found under a prefix, in topology order.
type CleanResult struct {
	Deleted []CleanedQueue // queues deleted (with DryRun: that would be)
	InUse   []CleanedQueue // queues left because a consumer is attached: a run still going
	Absent  int            // names of the topologies that were not on the broker
	// Exchanges are the exchanges deleted (with DryRun: that would be).
	Exchanges []string
}

// CleanedQueue is one queue Clean found: its broker name, and the ready
// messages and consumers it had.
type CleanedQueue struct {
	Name      string
	Messages  int
	Consumers int
}

// Clean deletes, on the broker at url, every queue and exchange of topos
// that exists under names (a killed run's leftovers), except a queue a
// consumer is attached to: a run with that prefix is still going, and it
// owns that queue. With dryRun it deletes nothing and reports what it
// would delete. A passive declare of a missing queue closes its channel,
// so each name is checked on a channel of its own.
func Clean(ctx context.Context, url string, names Names, topos []flow.Topology, dryRun bool) (CleanResult, error) {
	var res CleanResult
	if names.Prefix == "" {
		return res, errors.New("clean needs a prefix: without one it would delete the seed's own names, which may be anyone's")
	}
	conn, err := dial(ctx, url, nil)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	seen := map[string]bool{}
	for _, t := range topos {
		for _, q := range t.Queues {
			name := names.Of(q.Name)
			if seen[name] {
				continue
			}
			seen[name] = true
			if err := cleanQueue(ctx, conn, name, dryRun, &res); err != nil {
				return res, err
			}
		}
	}
	for _, t := range topos {
		for _, x := range t.Exchanges {
			name := names.Of(x.Name)
			if seen["exchange "+name] {
				continue
			}
			seen["exchange "+name] = true
			if err := cleanExchange(ctx, conn, name, dryRun, &res); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// cleanQueue deletes broker queue name if it exists and has no consumer.
func cleanQueue(ctx context.Context, conn *amqp.Connection, name string, dryRun bool, res *CleanResult) error {
	q, err := inspectOn(ctx, conn, name)
	switch {
	case isNotFound(err):
		res.Absent++
		return nil
	case err != nil:
		return fmt.Errorf("checking queue %s: %w", name, err)
	}
	found := CleanedQueue{Name: name, Messages: q.Messages, Consumers: q.Consumers}
	if q.Consumers > 0 {
		res.InUse = append(res.InUse, found)
		return nil
	}
	if !dryRun {
		err := onChannel(ctx, conn, func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(name,
				true,  // ifUnused: a consumer that attached since the check keeps it
				false, // ifEmpty: no, a killed run's messages go with its queue
				false) // noWait: wait for the broker's answer
			return err
		})
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting queue %s: %w", name, err)
		}
	}
	res.Deleted = append(res.Deleted, found)
	return nil
}

// cleanExchange deletes broker exchange name if it exists.
func cleanExchange(ctx context.Context, conn *amqp.Connection, name string, dryRun bool, res *CleanResult) error {
	err := onChannel(ctx, conn, func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(name, "direct", true, false, false, false, nil)
	})
	switch {
	case isNotFound(err):
		res.Absent++
		return nil
	case err != nil:
		return fmt.Errorf("checking exchange %s: %w", name, err)
	}
	if !dryRun {
		err := onChannel(ctx, conn, func(ch *amqp.Channel) error {
			return ch.ExchangeDelete(name, false, false) // ifUnused, noWait: no
		})
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting exchange %s: %w", name, err)
		}
	}
	res.Exchanges = append(res.Exchanges, name)
	return nil
}

// onChannel runs f on a channel of its own on conn (an error from the
// broker closes the channel it happens on), bounded by ctx and opTimeout.
func onChannel(ctx context.Context, conn *amqp.Connection, f func(*amqp.Channel) error) error {
	return within(ctx, func() error {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		defer ch.Close()
		return f(ch)
	})
}

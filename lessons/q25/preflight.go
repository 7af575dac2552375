package q25

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
)

// preflightBound bounds the whole check, the old broker's trial included.
const preflightBound = 20 * time.Second

// trialDelay is the delayed retry the trial declares on an old broker:
// long enough that a message back sooner was plainly not held.
const trialDelay = time.Second

// Preflight checks that the broker at url is RabbitMQ 4.3 or newer. On an
// older one it declares the lesson's queue anyway (under a private
// prefix, deleted again), rejects one message with requeue and times its
// return, and says in one line, wrapping lesson.ErrBrokerTooOld, whether
// that broker refused the declaration or took it and ignored it.
func Preflight(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, preflightBound)
	defer cancel()
	s, err := rabbit.Open(ctx, url, rabbit.RunNames(), lab.NewClock(1), nil)
	if err != nil {
		return err
	}
	defer s.Close(context.WithoutCancel(ctx))
	version := rabbit.ServerVersion(s.Connection())
	if lesson.VersionAtLeast(version, MinBroker) {
		return nil
	}
	return lesson.BrokerTooOld("lesson 25 needs RabbitMQ %s or newer (quorum queue delayed retry); "+
		"RabbitMQ %s %s; run it on a 4.3 broker: RABBITMQ_URL=<its URL>",
		MinBroker, version, trial(ctx, s, version))
}

// trial is what an old broker (of version) does with the lesson's
// declaration: it refuses it (with the broker's words), or it takes it,
// and then how soon a rejected message comes back, and where.
func trial(ctx context.Context, s *rabbit.Session, version string) string {
	args := Arguments(TypeFailed, trialDelay, trialDelay, DeliveryLimit, "")
	if err := s.Topo().DeclareArgs(ctx, Queue, args); err != nil {
		var amqpErr *amqp.Error
		if errors.As(err, &amqpErr) {
			return fmt.Sprintf("refused the declaration (%d %s)", amqpErr.Code, amqpErr.Reason)
		}
		return fmt.Sprintf("could not be tried (%v)", err)
	}
	back, err := rejectAndTime(ctx, s)
	if err != nil {
		return fmt.Sprintf("took x-delayed-retry-* without a word; the trial could not finish (%v)", err)
	}
	if back >= trialDelay {
		return fmt.Sprintf("took x-delayed-retry-* and held a rejected message %d ms", back.Milliseconds())
	}
	return fmt.Sprintf("took x-delayed-retry-* without a word and ignored it: a rejected message "+
		"came back after %d ms, not %s, %s", back.Milliseconds(), dur(trialDelay),
		rabbit.RequeuePlace(true, true, version)) // the trial's queue declares x-delivery-limit
}

// rejectAndTime publishes one message to the trial queue, rejects its
// first delivery with requeue and returns how long the second took.
func rejectAndTime(ctx context.Context, s *rabbit.Session) (time.Duration, error) {
	pub, err := s.Publisher(ctx)
	if err != nil {
		return 0, err
	}
	defer pub.Close()
	conn, err := s.Dial(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, s.Names.Of(Queue), "Trial",
		false, // autoAck
		false, // exclusive
		false, // noLocal
		false, // noWait
		nil)
	if err != nil {
		return 0, err
	}
	if err := pub.Publish(ctx, Queue, "T1", nil); err != nil {
		return 0, err
	}
	var rejected time.Time
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return 0, errors.New("the channel closed")
			}
			if rejected.IsZero() {
				rejected = time.Now()
				_ = d.Reject(true) // requeue
				continue
			}
			back := time.Since(rejected)
			_ = d.Ack(false) // multiple
			return back, nil
		case <-time.After(3 * trialDelay):
			return 3 * trialDelay, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

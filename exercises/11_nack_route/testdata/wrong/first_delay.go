//go:build qlabex

// Wrong: the delay is read for the count before the increment, so from
// the second retry on each wait is one step behind the schedule.
// First failure: a failure with attempts left: a copy to email-retry-queue with its delay, then ack

package nackroute

import (
	"context"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/seeds/notify"
)

func EmailQueueArgs(n Names) amqp.Table {
	return amqp.Table{"x-dead-letter-exchange": n.DLX, "x-dead-letter-routing-key": n.DLQKey}
}

func Settle(ctx context.Context, d amqp.Delivery, job notify.Job, sendErr error, n Names, p Policy, publish Publish) error {
	if sendErr == nil {
		return d.Ack(false)
	}
	wait := p.Delay(job.Retries)
	job.Retries++
	if job.Retries >= p.Attempts {
		return d.Nack(false, false)
	}
	copied := amqp.Publishing{ContentType: "application/json", Body: job.Encode(),
		Expiration: strconv.FormatInt(wait.Milliseconds(), 10)}
	if err := publish(ctx, n.RetryQueue, copied); err != nil {
		return err
	}
	return d.Ack(false)
}

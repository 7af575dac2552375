//go:build qlabex

// Wrong: dead-letters through the default exchange straight to email-dlq,
// not through email-dlx as the diagram and the document's binding say.
// First failure: a nack reaches email-dlq through email-dlx

package nackroute

import (
	"context"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/seeds/notify"
)

func EmailQueueArgs(n Names) amqp.Table {
	return amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": n.DLQ}
}

func Settle(ctx context.Context, d amqp.Delivery, job notify.Job, sendErr error, n Names, p Policy, publish Publish) error {
	if sendErr == nil {
		return d.Ack(false)
	}
	job.Retries++
	if job.Retries >= p.Attempts {
		return d.Nack(false, false)
	}
	copied := amqp.Publishing{ContentType: "application/json", Body: job.Encode(),
		Expiration: strconv.FormatInt(p.Delay(job.Retries).Milliseconds(), 10)}
	if err := publish(ctx, n.RetryQueue, copied); err != nil {
		return err
	}
	return d.Ack(false)
}

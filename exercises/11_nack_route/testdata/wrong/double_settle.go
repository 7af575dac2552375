//go:build qlabex

// Wrong: acks the original twice after a copy (once before, once after):
// the broker closes the channel on the second ack.
// First failure: every delivery is settled and the run ends

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
	job.Retries++
	if job.Retries >= p.Attempts {
		return d.Nack(false, false)
	}
	_ = d.Ack(false)
	copied := amqp.Publishing{ContentType: "application/json", Body: job.Encode(),
		Expiration: strconv.FormatInt(p.Delay(job.Retries).Milliseconds(), 10)}
	if err := publish(ctx, n.RetryQueue, copied); err != nil {
		return err
	}
	return d.Ack(false)
}

//go:build qlabex

package nackroute

import (
	"context"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/seeds/notify"
)

// EmailQueueArgs returns the arguments to declare email-queue with: a
// delivery the worker nacks (requeue false) is dead-lettered through the
// exchange n.DLX with the routing key n.DLQKey, which n.DLX binds to n.DLQ.
func EmailQueueArgs(n Names) amqp.Table {
	return amqp.Table{
		"x-dead-letter-exchange":    n.DLX,    // a nack goes to email-dlx …
		"x-dead-letter-routing-key": n.DLQKey, // … with the key email-dlx binds email-dlq with
	}
}

// Settle settles delivery d of job once the send is over (sendErr nil:
// the email went out), exactly once. A sent email is acked. A failure
// with attempts left (job.Retries counts the retries so far, so this was
// attempt job.Retries+1 of p.Attempts) publishes a copy of the job with
// Retries one higher to n.RetryQueue, expiring after p.Delay of the new
// count, and then acks the original. The last failure is a nack with
// requeue false: email-queue's dead-letter route takes it to email-dlq.
// If publish fails, Settle returns its error and settles nothing: the
// broker hands the delivery out again when the channel closes.
func Settle(ctx context.Context, d amqp.Delivery, job notify.Job, sendErr error, n Names, p Policy, publish Publish) error {
	if sendErr == nil {
		return d.Ack(false)
	}
	job.Retries++
	if job.Retries >= p.Attempts {
		return d.Nack(false, false) // requeue false: email-dlx → email-dlq
	}
	copied := amqp.Publishing{
		MessageId: d.MessageId, ContentType: "application/json", DeliveryMode: amqp.Persistent,
		Body:       job.Encode(),
		Expiration: strconv.FormatInt(p.Delay(job.Retries).Milliseconds(), 10), // a per-message TTL, in ms as a string
	}
	if err := publish(ctx, n.RetryQueue, copied); err != nil {
		return err
	}
	return d.Ack(false) // the copy is confirmed: now the original can go
}

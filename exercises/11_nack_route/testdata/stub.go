//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package nackroute

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/seeds/notify"
)

// EmailQueueArgs returns the arguments to declare email-queue with: a
// delivery the worker nacks (requeue false) is dead-lettered through the
// exchange n.DLX with the routing key n.DLQKey, which n.DLX binds to n.DLQ.
func EmailQueueArgs(n Names) amqp.Table {
	// TODO: the two dead-letter arguments, "x-dead-letter-exchange" and
	//       "x-dead-letter-routing-key". Without them a nack drops the
	//       message.
	return amqp.Table{}
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
	// TODO: the document's consume callback nacks every failure, so an
	//       email that would have gone out a minute later is parked at
	//       once. Retry it while attempts are left:
	//   - job.Retries++; at p.Attempts, nack (requeue false) and stop;
	//   - otherwise publish(ctx, n.RetryQueue, …) a copy: Body
	//     job.Encode(), Expiration p.Delay(job.Retries) in milliseconds
	//     as a decimal string;
	//   - then ack the original, once.
	return d.Nack(false, false)
}

package nackroute

import (
	"context"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Names are one check's names for the document's queues and exchange
// (seeds/notify's names under the checker's private prefix): use them,
// not the document's literals.
type Names struct {
	EmailQueue string // email-queue: the API publishes jobs here, the worker consumes them
	RetryQueue string // email-retry-queue: an expired message goes back to EmailQueue (default exchange); no TTL of its own
	DLX        string // email-dlx, a direct exchange
	DLQ        string // email-dlq, bound to DLX with the key DLQKey
	DLQKey     string // the routing key DLX binds DLQ with
}

// Policy is how often an email is tried and how long each retry waits.
type Policy struct {
	Attempts int             // the send is tried this often; the last failure goes to email-dlq
	Delays   []time.Duration // the wait before each retry, in order
}

// Delay is the wait before retry number retry (1 is the first retry):
// Delays[retry-1], the last one for every retry past the end. (The
// document's getRetryDelay(job.retries), called after the increment,
// starts at index 1: its first delay, 10 s, is never used.)
func (p Policy) Delay(retry int) time.Duration {
	return p.Delays[min(max(retry, 1), len(p.Delays))-1]
}

// Publish publishes msg to queue through the default exchange (the
// routing key is the queue's name) and waits for the broker's confirm.
// A message no queue takes is an error, not a silent drop.
type Publish func(ctx context.Context, queue string, msg amqp.Publishing) error

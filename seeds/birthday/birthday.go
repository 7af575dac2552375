// Package birthday is seed 003's birthday message scheduler as the broker
// sees it: the names of its topic exchange, main queue, DLX and DLQ, its
// numbers (a cron every minute, an hour ahead, prefetch 5), its retry
// policy (five retries 2 s·2ⁿ apart) with one TTL wait queue per delay,
// its worker's error classes and its verdict on a failed attempt.
// Q18–Q21 and Q25 run it.
//
//	birthday.messages (topic) ─birthday, anniversary→ birthday.messages.queue
//	  ─dead-letter→ birthday.messages.dlx (direct) ─dlq→ birthday.messages.dlq
//
// The names are the seed's; a run adds its private prefix.
package birthday

import (
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/flow"
)

// The seed's names.
const (
	Exchange = "birthday.messages"       // topic: birthday, anniversary
	Queue    = "birthday.messages.queue" // bound with both keys; the workers consume it
	DLX      = "birthday.messages.dlx"   // direct: the main queue's dead-letter exchange
	DLQKey   = "dlq"                     // the DLX's one key
	DLQ      = "birthday.messages.dlq"   // bound to the DLX with dlq
)

// Scheduler is the actor of the seed's MinuteEnqueueScheduler, the cron
// that publishes the rows due within the hour.
const Scheduler = "Minute-Scheduler"

// The seed's numbers, in lesson time.
const (
	Tick     = time.Minute // CRON_MINUTE_SCHEDULE="* * * * *"
	Horizon  = time.Hour   // "finds messages due in next hour"
	Prefetch = 5           // QUEUE_CONCURRENCY, the consumer's prefetch
	// ReconnectTime is how long amqp-connection-manager 5.0.0 waits after
	// a connection closes, and after each failed connect, before it tries
	// the next URL: reconnectTimeInSeconds, which defaults to the seed's
	// heartbeatIntervalInSeconds of 60 (src/AmqpConnectionManager.ts at
	// tag v5.0.0). Publishes made meanwhile wait in the library's memory;
	// one unconfirmed when the connection closed is rejected ("channel
	// closed", amqplib 2.3.1).
	ReconnectTime = 60 * time.Second
)

// Topology is the seed's: the topic exchange binds birthday and
// anniversary to the main queue, which dead-letters through the direct DLX
// (key dlq) into the DLQ. The seed declares both queues as quorum queues
// on three nodes; Q21 does that on a cluster, the other lessons declare
// them classic.
func Topology() flow.Topology {
	return flow.Topology{
		Queues: []flow.Queue{
			{Name: Queue, Role: flow.Work, DeadLetterExchange: DLX, DeadLetterKey: DLQKey},
			{Name: DLQ, Role: flow.DLQ},
		},
		Exchanges: []flow.Exchange{{Name: Exchange, Kind: flow.Topic}, {Name: DLX, Kind: flow.Direct}},
		Bindings: []flow.Binding{
			{Exchange: Exchange, Queue: Queue, Key: "birthday"},
			{Exchange: Exchange, Queue: Queue, Key: "anniversary"},
			{Exchange: DLX, Queue: DLQ, Key: DLQKey},
		},
	}
}

// The seed's retry policy.
const (
	MaxRetries = 5               // QUEUE_MAX_RETRIES
	FirstDelay = 2 * time.Second // QUEUE_RETRY_DELAY, doubled on each retry
)

// Delay is the seed's wait before retry n (0-based): 2 s·2ⁿ.
func Delay(retry int) time.Duration { return FirstDelay << retry }

// WaitQueue is the TTL wait queue of retry n: birthday.messages.retry.8s.
func WaitQueue(retry int) string {
	return fmt.Sprintf("%s.retry.%ds", Queue, int(Delay(retry).Seconds()))
}

// RetryTopology is Topology with one wait queue per delay, each
// dead-lettering back to the main queue when its TTL runs out: the
// seed's "retry with delay" as RabbitMQ can do it.
func RetryTopology() flow.Topology {
	t := Topology()
	for n := range MaxRetries {
		t.Queues = append(t.Queues, flow.Queue{Name: WaitQueue(n), Role: flow.Wait,
			TTL: Delay(n), DeadLetterTo: Queue})
	}
	return t
}

// The error classes of the seed's worker.
var (
	ErrNetwork    = errors.New("network error: connection reset")
	ErrTimeout    = errors.New("timeout after 10 s")
	ErrRateLimit  = errors.New("rate limited (429)")
	ErrValidation = flow.Permanent(errors.New("validation: birthday message has no recipient"))
	ErrNotFound   = flow.Permanent(errors.New("not found: no row for this message"))
	ErrAuth       = flow.Permanent(errors.New("auth: the mail API refused the key (401)"))
)

// Decide is the seed's verdict on a failed attempt: permanent errors park
// at once, transient ones retry through retry n's wait queue while fewer
// than MaxRetries are spent, then park.
func Decide(d *flow.Delivery, err error) flow.Decision {
	retries := d.Attempt - 1 // the retries before this attempt
	switch {
	case err == nil:
		return flow.Ack()
	case flow.IsPermanent(err):
		return flow.Park(DLQ, "permanent, no retry: "+err.Error())
	case retries >= MaxRetries:
		return flow.Park(DLQ, fmt.Sprintf("transient, %d retries spent: %v", retries, err))
	}
	return flow.Retry(WaitQueue(retries), err)
}

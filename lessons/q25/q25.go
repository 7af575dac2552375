// Package q25 is lesson Q25 — the retry the broker does itself: RabbitMQ
// 4.3's quorum queue delayed retry, seed 003's "NACK + requeue with
// delay" made real.
//
// Notice: on RabbitMQ 4.3 the worker only rejects a failed message with
// requeue: the quorum queue holds it 2 s × its delivery count (2, 4, 6,
// 8, 10 s: linear, where the seed asks 2, 4, 8, 16, 32 s) and
// dead-letters the sixth failure itself (x-delivery-limit 5). A held
// message is in no prefetch slot, so the healthy H goes through at once,
// unlike Q19's timer before the nack. Only basic.reject counts: a
// basic.nack waits 2 s every time and never reaches the limit.
//
// The seed's numbers: QUEUE_RETRY_DELAY 2000 ms (x-delayed-retry-min),
// its longest wait 32 s (x-delayed-retry-max), QUEUE_MAX_RETRIES 5
// (x-delivery-limit), QUEUE_CONCURRENCY 5 (the prefetch). The topology:
// birthday.messages.queue, a quorum queue as the seed declares it, and
// birthday.messages.dlq behind it (through the default exchange).
//
// The mechanism is the queue's arguments and one settle call:
//
//	args := amqp.Table{
//		"x-queue-type":         "quorum",
//		"x-delayed-retry-type": "failed", // delay what basic.reject returns
//		"x-delayed-retry-min":  2000,     // ms: 2 s × x-delivery-count …
//		"x-delayed-retry-max":  32000,    // … up to 32 s (without it: 2 s, always)
//		"x-delivery-limit":     5,        // the sixth failure is dead-lettered
//	}
//	ch.QueueDeclare(queue, true /* durable */, false, false, false, args)
//	d.Reject(true /* requeue */) // counts a failed delivery; Nack does not
//
// Broker only: the delay is the broker's, and it needs RabbitMQ 4.3 or
// newer. On an older broker the lesson says in one line what that broker
// did with the same declaration, and stops (exit 2).
//
// Why so long: two parts (Q19's stalled load, then one message per retry
// type and settle call, settles.go), a worker that records where each
// failed message was at each moment (worker.go), and the preflight that
// tells an older broker from 4.3 in one line (preflight.go).
package q25

import (
	"context"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/lessons/q19"
	"github.com/queuelab/qlab/seeds/birthday"
)

// Version is the broker the lesson's figures were measured on.
const Version = "4.3.6"

var Lesson = lesson.Lesson{
	ID:    "Q25",
	Title: "The retry the broker does itself (RabbitMQ 4.3 delayed retry)",
	Notice: "On RabbitMQ 4.3 the worker only rejects a failed message with requeue: the quorum " +
		"queue holds it 2 s × its delivery count (2, 4, 6, 8, 10 s, linear where the seed asks 2, " +
		"4, 8, 16, 32 s) and dead-letters the sixth failure itself (x-delivery-limit 5). A held " +
		"message takes no prefetch slot, so the healthy H goes through at once. Only " +
		"basic.reject counts: a basic.nack waits 2 s every time and never reaches the limit.",
	Rabbit:     runQ25,
	Default:    lab.Rabbit,
	MinBroker:  MinBroker,
	Preflight:  Preflight,
	WatchSpeed: 5,                 // 2 min of lesson time in about 25 s (measured on 4.3.6)
	Length:     125 * time.Second, // broker only: no golden to hold it to
	// At 10× the shortest wait, 2 s, is 200 ms real: a message back at
	// once (a few ms) stays plainly apart from one held, on a loaded
	// machine too (at 20×, 100 ms, it did not always).
	TestSpeed:  10,
	Topologies: Topologies,
}

// MinBroker is the oldest RabbitMQ with quorum queue delayed retry.
const MinBroker = "4.3"

// The seed's retry policy, as the broker can declare it.
const (
	// MinDelay is x-delayed-retry-min: the seed's QUEUE_RETRY_DELAY, the
	// wait after the first failure.
	MinDelay = birthday.FirstDelay
	// MaxDelay is x-delayed-retry-max: the seed's longest wait, 2 s × 2⁴.
	// The linear back-off never gets there in five retries (10 s), but
	// without a maximum the delay never grows at all (measured: 2 s each
	// time on 4.3.6).
	MaxDelay = birthday.FirstDelay << (birthday.MaxRetries - 1)
	// DeliveryLimit is x-delivery-limit: the seed's QUEUE_MAX_RETRIES.
	// Five failed deliveries are retried; the sixth is dead-lettered.
	DeliveryLimit = birthday.MaxRetries
	// Slots is the seed's prefetch (QUEUE_CONCURRENCY).
	Slots = birthday.Prefetch
)

// The retry types of x-delayed-retry-type (RabbitMQ 4.3).
const (
	TypeAll      = "all"      // every message returned to the queue
	TypeFailed   = "failed"   // returns that count a failed delivery (reject, a closed channel)
	TypeReturned = "returned" // returns that do not (nack)
)

// The queues, by seed name.
const (
	// Queue is seed 003's main queue, a quorum queue as the seed says,
	// with delayed retry.
	Queue = birthday.Queue
	// DLQ is where the delivery limit sends a message (through the
	// default exchange: the lesson declares no exchange).
	DLQ = birthday.DLQ
	// LimitQueue is part (c)'s queue: Queue's arguments, the poison
	// messages alone.
	LimitQueue = "birthday.messages.limit"
	// settlePrefix starts part (b)'s queues, one per retry type and
	// settle: birthday.messages.settle.failed.nack.
	settlePrefix = "birthday.messages.settle."
)

// Arguments are the x-arguments of a quorum queue with delayed retry of
// type retryType, waiting lo × x-delivery-count up to hi (real time: the
// broker knows no lesson clock), at most limit failed deliveries, then
// dead-lettered to dlq (a broker name; "" for none).
func Arguments(retryType string, lo, hi time.Duration, limit int, dlq string) amqp.Table {
	args := amqp.Table{
		"x-queue-type":         "quorum",
		"x-delayed-retry-type": retryType,
		"x-delayed-retry-min":  max(1, lo.Milliseconds()),
		"x-delayed-retry-max":  max(1, hi.Milliseconds()),
		"x-delivery-limit":     int64(limit),
	}
	if dlq != "" {
		args["x-dead-letter-exchange"] = ""
		args["x-dead-letter-routing-key"] = dlq
	}
	return args
}

// BrokerDelay is how long a quorum queue of type retryType holds a
// message returned by settle ("nack", "reject" or "close") whose
// x-delivery-count is count after it: lo × count (lo for a count of 0)
// up to hi, or 0 where the type does not delay that settle. That is the
// quorum queue guide's rule, and what 4.3.6 did in every run measured;
// the lesson's tables set the measured waits beside it.
func BrokerDelay(retryType string, s Settle, count int, lo, hi time.Duration) time.Duration {
	switch {
	case retryType == TypeFailed && !s.Counts(), retryType == TypeReturned && s.Counts():
		return 0
	}
	return min(time.Duration(max(1, count))*lo, hi)
}

// Settle is how a worker hands a failed delivery back.
type Settle string

// The settles of AMQP 0-9-1 that return a message to its queue.
const (
	Nack   Settle = "nack"   // basic.nack, requeue
	Reject Settle = "reject" // basic.reject, requeue
	Close  Settle = "close"  // the channel closes with the delivery unacked
)

// Counts reports whether s counts as a failed delivery on 4.3: it
// increments x-delivery-count, which the delay grows with and the
// delivery limit is checked against. basic.nack does not (measured on
// 4.3.6; the quorum queue guide's table says the same).
func (s Settle) Counts() bool { return s != Nack }

// Topologies is every queue the lesson's runs declare, for qlab broker
// clean: parts (a) to (c), and Q19's wait queues of part (d).
func Topologies() []flow.Topology {
	t := flow.Topology{Queues: []flow.Queue{
		{Name: Queue, Role: flow.Work, Quorum: true, DeadLetterTo: DLQ},
		{Name: DLQ, Role: flow.DLQ},
		{Name: LimitQueue, Role: flow.Work, Quorum: true, DeadLetterTo: DLQ},
	}}
	for _, c := range cells() {
		t.Queues = append(t.Queues, flow.Queue{Name: c.queue(), Role: flow.Work, Quorum: true})
	}
	return []flow.Topology{t, birthday.RetryTopology()}
}

// runQ25 runs the four parts on a 4.3 broker.
func runQ25(ctx context.Context, env *lesson.Env) error {
	_, err := runParts(ctx, env)
	return err
}

// parts is what each part measured, for the lesson's tests.
type parts struct {
	a measured
	b []*cell
	c outcome
	d q19.Stall
}

// runParts runs the four parts in order, after the preflight.
func runParts(ctx context.Context, env *lesson.Env) (p parts, err error) {
	if err := Preflight(ctx, env.Broker); err != nil {
		return p, err
	}
	if p.a, err = workload(ctx, env); err != nil {
		return p, err
	}
	if p.b, err = settles(ctx, env); err != nil {
		return p, err
	}
	if p.c, err = limit(ctx, env); err != nil {
		return p, err
	}
	p.d, err = beside(ctx, env, p.a)
	return p, err
}

package rabbit

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
)

// The topology types are the flow seam's: lessons state them once, and
// both backends read them.
type (
	Role     = flow.Role
	Queue    = flow.Queue
	Topology = flow.Topology
)

// The roles a queue can play (see flow.Role).
const (
	Work  = flow.Work
	Wait  = flow.Wait
	DLQ   = flow.DLQ
	Delay = flow.Delay
)

// Arguments are the x-arguments queue q is declared with under names and
// clock. The TTL is the real time the broker waits, at least 1 ms.
func Arguments(q Queue, names Names, clock lab.Clock) amqp.Table {
	args := amqp.Table{}
	if q.TTL > 0 {
		args["x-message-ttl"] = max(int64(1), clock.Real(q.TTL).Milliseconds())
	}
	switch {
	case q.DeadLetterTo != "":
		args["x-dead-letter-exchange"] = ""
		args["x-dead-letter-routing-key"] = names.Of(q.DeadLetterTo)
	case q.DeadLetterExchange != "":
		args["x-dead-letter-exchange"] = names.Of(q.DeadLetterExchange)
		if q.DeadLetterKey != "" {
			args["x-dead-letter-routing-key"] = q.DeadLetterKey
		}
	}
	if q.MaxLength > 0 {
		args["x-max-length"] = int64(q.MaxLength)
	}
	if q.Quorum {
		args["x-queue-type"] = "quorum"
	}
	if q.Overflow != flow.DropHead {
		args["x-overflow"] = string(q.Overflow)
	}
	return args
}

// The queue names of lesson Q10 (seed 001), as the seed spells them.
const (
	SequentialQueue            = "sequential.queue"
	SequentialRetryWait        = "sequential.retry.wait"
	SequentialRetryProcessing  = "sequential.retry.processing"
	SequentialSecondRetryWait  = "sequential.second.retry.wait"
	SequentialSecondProcessing = "sequential.second.retry.processing"
	SequentialDLQ              = "sequential.dlq"
)

// SequentialTopology is seed 001's Q10 flow: each processing queue
// dead-letters (on a reject) into a wait queue, whose TTL (1 s, then 2 s)
// dead-letters into the next processing queue; the last one dead-letters
// into the DLQ. The broker does every move; workers only ack or reject.
func SequentialTopology() Topology {
	return Topology{Queues: []Queue{
		{Name: SequentialQueue, Role: Work, DeadLetterTo: SequentialRetryWait},
		{Name: SequentialRetryWait, Role: Wait, TTL: time.Second, DeadLetterTo: SequentialRetryProcessing},
		{Name: SequentialRetryProcessing, Role: Work, DeadLetterTo: SequentialSecondRetryWait},
		{Name: SequentialSecondRetryWait, Role: Wait, TTL: 2 * time.Second, DeadLetterTo: SequentialSecondProcessing},
		{Name: SequentialSecondProcessing, Role: Work, DeadLetterTo: SequentialDLQ},
		{Name: SequentialDLQ, Role: DLQ},
	}}
}

// The queue names of seed 000's email loop.
const (
	EmailQueue = "email_queue"
	EmailWait  = "email_queue_wait"
	EmailDLQ   = "email_queue_dlq"
)

// EmailLoopTopology is seed 000's single wait-queue loop: email_queue
// dead-letters rejected messages into email_queue_wait, whose TTL (the
// seed uses 5 s) dead-letters them back into email_queue; the x-death
// count tells the worker how often a message went round. email_queue_dlq
// is where the worker publishes a message after its last retry.
func EmailLoopTopology(wait time.Duration) Topology {
	return Topology{Queues: []Queue{
		{Name: EmailQueue, Role: Work, DeadLetterTo: EmailWait},
		{Name: EmailWait, Role: Wait, TTL: wait, DeadLetterTo: EmailQueue},
		{Name: EmailDLQ, Role: DLQ},
	}}
}

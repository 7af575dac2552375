package rabbit

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
)

// Role says what a queue is for.
type Role string

// The roles a queue can play.
const (
	Work Role = "work" // consumed by a worker
	Wait Role = "wait" // never consumed: messages sit out their TTL, then dead-letter onward
	DLQ  Role = "dlq"  // the dead-letter queue, where messages that gave up are parked
	// Delay is never consumed either, but has no queue TTL: each message
	// carries its own (the expiration property, see Expiration) and
	// dead-letters onward when it expires. RabbitMQ only expires messages
	// at the head of a queue, so a long TTL holds back every shorter one
	// queued behind it (the head-of-line trap of seed 002).
	Delay Role = "delay"
)

// Queue is one durable queue of a Topology, named as in the seed (the
// Session adds the run's prefix).
type Queue struct {
	Name string
	Role Role
	// TTL is the lesson-time x-message-ttl; 0 means none. The Session
	// declares Clock.Real(TTL), so at --speed S the broker waits TTL/S.
	TTL time.Duration
	// DeadLetterTo names the queue (of the same Topology) that messages go
	// to when they expire here or are rejected without requeue; "" means
	// none. It becomes x-dead-letter-exchange "" (the default exchange) and
	// x-dead-letter-routing-key = that queue's name.
	DeadLetterTo string
}

// Topology is a declarative set of queues that lessons describe and that
// renderers (TUI, compare) can read: names, TTLs and where each queue
// dead-letters.
type Topology struct {
	Queues []Queue
}

// Queue returns the queue called name and whether it exists.
func (t Topology) Queue(name string) (Queue, bool) {
	for _, q := range t.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return Queue{}, false
}

// Check reports a topology whose dead-letter routes name unknown queues or
// whose wait queues could never empty, so mistakes fail before the broker
// is touched.
func (t Topology) Check() error {
	seen := map[string]bool{}
	for _, q := range t.Queues {
		if q.Name == "" || seen[q.Name] {
			return fmt.Errorf("topology: queue name %q is empty or repeated", q.Name)
		}
		seen[q.Name] = true
	}
	for _, q := range t.Queues {
		if q.DeadLetterTo != "" && !seen[q.DeadLetterTo] {
			return fmt.Errorf("topology: %s dead-letters to unknown queue %s", q.Name, q.DeadLetterTo)
		}
		if q.Role == Wait && (q.TTL <= 0 || q.DeadLetterTo == "") {
			return fmt.Errorf("topology: wait queue %s needs a TTL and a dead-letter queue", q.Name)
		}
		if q.Role == Delay && q.DeadLetterTo == "" {
			return fmt.Errorf("topology: delay queue %s needs a dead-letter queue", q.Name)
		}
	}
	return nil
}

// Arguments are the x-arguments queue q is declared with under names and
// clock. The TTL is the real time the broker waits, at least 1 ms.
func (q Queue) Arguments(names Names, clock lab.Clock) amqp.Table {
	args := amqp.Table{}
	if q.TTL > 0 {
		args["x-message-ttl"] = max(int64(1), clock.Real(q.TTL).Milliseconds())
	}
	if q.DeadLetterTo != "" {
		args["x-dead-letter-exchange"] = ""
		args["x-dead-letter-routing-key"] = names.Of(q.DeadLetterTo)
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

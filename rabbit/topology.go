package rabbit

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
)

// Arguments are the x-arguments queue q is declared with under names and
// clock. The TTL is the real time the broker waits, at least 1 ms.
func Arguments(q flow.Queue, names Names, clock lab.Clock) amqp.Table {
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

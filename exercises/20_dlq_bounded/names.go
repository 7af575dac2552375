package dlqbounded

import (
	"errors"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/seeds/raffle"
)

// The queues, as lesson Q24's fix declares them beside the seed's
// (q24.DLQWait, q24.Parked; a test in package exercises keeps them equal,
// without the lesson's database drivers in every re-check's build).
const (
	DLQ     = raffle.DLQ             // the users the main consumer gave up on: what Handle consumes
	DLQWait = "raffle_dlq_retry_10s" // holds a failed try raffle.RetryTTL (10 s), then back to DLQ
	Parked  = "raffle_parked"        // the parking queue: nothing consumes it, a person looks
)

// Topology is seed 004's topology with the fix's two queues, as lesson Q24
// declares it: DLQWait dead-letters back to DLQ; nothing consumes Parked.
func Topology() flow.Topology {
	t := raffle.Topology()
	t.Queues = append(t.Queues,
		flow.Queue{Name: DLQWait, Role: flow.Wait, TTL: raffle.RetryTTL, DeadLetterTo: DLQ},
		flow.Queue{Name: Parked, Role: flow.DLQ})
	return t
}

// MaxTries is how many tries the DLQ consumer gives a user: the last
// failed one parks it.
const MaxTries = 3

// ErrMalformed is in the error of a try whose body is not a user: no
// retry will ever mend it.
var ErrMalformed = errors.New("malformed JSON")

package dlqbounded

import (
	"errors"

	"github.com/queuelab/qlab/lessons/q24"
	"github.com/queuelab/qlab/lessons/raffle"
)

// The queues, as lesson Q24's fix declares them beside the seed's.
const (
	DLQ     = raffle.DLQ  // the users the main consumer gave up on: what Handle consumes
	DLQWait = q24.DLQWait // holds a failed try raffle.RetryTTL (10 s), then back to DLQ
	Parked  = q24.Parked  // the parking queue: nothing consumes it, a person looks
)

// MaxTries is how many tries the DLQ consumer gives a user: the last
// failed one parks it.
const MaxTries = 3

// ErrMalformed is in the error of a try whose body is not a user: no
// retry will ever mend it.
var ErrMalformed = errors.New("malformed JSON")

package rabbit

import (
	"strconv"
	"time"

	"github.com/queuelab/qlab/lab"
)

// Expiration is the AMQP expiration property (a per-message TTL, in real
// milliseconds as a decimal string) for lesson duration d under clock. A
// negative d counts as 0: the message expires as soon as it reaches the
// head of its queue.
func Expiration(clock lab.Clock, d time.Duration) string {
	return strconv.FormatInt(max(0, clock.Real(d).Milliseconds()), 10)
}

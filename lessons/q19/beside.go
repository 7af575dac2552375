package q19

import (
	"context"
	"time"

	"github.com/queuelab/qlab/lesson"
)

// LimitFor is part (b)'s rate limit: S1–S5 fail for this long (lesson
// time from the part's start), for a lesson that runs the same workload
// another way (Q25).
const LimitFor = limitFor

// PublishTime is the lesson time between two publishes of part (b)'s
// load.
const PublishTime = publishTime

// SendTime is how long one attempt takes (lesson time).
const SendTime = sendTime

// Stall is what part (b) measured for one way of waiting out the rate
// limit.
type Stall struct {
	FirstH   time.Duration // when the healthy message's first attempt started
	BeforeH  int           // attempts at the five that started before it
	Attempts int           // attempts at the five
	MaxCount int           // the largest retry count a message carried; -1: no headers
	LastSent time.Duration // when the last of the five was sent
}

// StallThroughWaitQueues runs part (b)'s load (prefix1–prefix5
// rate-limited for LimitFor, prefixH healthy, prefetch 5) through part
// (a)'s TTL wait queues on a backend of its own, and returns what it
// measured: the workload Q25 sets beside the broker's own delayed retry.
func StallThroughWaitQueues(ctx context.Context, env *lesson.Env, prefix string) (Stall, error) {
	m, err := runStall(ctx, env, waitQueues, prefix)
	return Stall{FirstH: m.firstH, BeforeH: m.beforeH, Attempts: m.attempts, MaxCount: m.maxCount,
		LastSent: m.lastSent}, err
}

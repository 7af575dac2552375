package q25

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/q19"
	"github.com/queuelab/qlab/seeds/birthday"
)

// Part (a) is Q19 part (b)'s load: D1–D5 rate-limited for q19.LimitFor,
// DH healthy right behind them, prefetch 5; the worker rejects each
// failure with requeue and the queue does the waiting.

// healthy is part (a)'s healthy message.
const healthy = "DH"

// lookAfter is how long after the fifth first failure part (a) looks
// where the five wait: every one has failed once, and none is back (the
// first comes back 2 s after its reject, about 0.2 s before the fifth's).
const lookAfter = 500 * time.Millisecond

// measured is what part (a) measured, for its tables and part (d)'s.
type measured struct {
	outcome
	firstH   time.Duration // when DH's first attempt started
	beforeH  int           // attempts at D1–D5 before it
	attempts int           // attempts at D1–D5
	maxCount int           // the largest x-delivery-count a delivery carried
	lastSent time.Duration // when the last of D1–D5 was sent
}

// workload is part (a).
func workload(ctx context.Context, env *lesson.Env) (measured, error) {
	env.Phase(fmt.Sprintf("(a) D1–D5 rate-limited for %s, DH healthy, prefetch %d: "+
		"reject, and the quorum queue waits", dur(q19.LimitFor), Slots))
	var tasks []string
	for i := range Slots {
		tasks = append(tasks, fmt.Sprintf("D%d", i+1))
	}
	tasks = append(tasks, healthy)
	env.Report(queueTable(env.Stream.Clock()))
	out, err := runJob(ctx, env, job{
		queue: Queue, retryType: TypeFailed, lo: MinDelay, hi: MaxDelay, tasks: tasks,
		settle: func(string) Settle { return Reject },
		fails: func(task string, _ int, at time.Duration) error {
			if task != healthy && at < q19.LimitFor {
				return birthday.ErrRateLimit
			}
			return nil
		},
		look: lookAfter, lookFor: Slots,
	})
	m := measure(out)
	if err != nil {
		return m, err
	}
	env.Report(scheduleTable(m))
	return m, nil
}

// measure sums part (a)'s deliveries up.
func measure(out outcome) measured {
	m := measured{outcome: out, firstH: -1}
	for _, r := range out.rows {
		m.maxCount = max(m.maxCount, r.count)
		switch {
		case r.task == healthy:
			if m.firstH < 0 {
				m.firstH, m.beforeH = r.at, m.attempts
			}
		default:
			m.attempts++
			if r.err == nil {
				m.lastSent = max(m.lastSent, r.at)
			}
		}
	}
	return m
}

// Part (c): two messages that fail every time on Queue's arguments. P1
// is rejected each time: the broker counts, waits longer each time and
// dead-letters the sixth failure. P2 is nacked each time: the broker
// never counts, waits 2 s each time, and only the lab's guard ends it.

// guard is how many deliveries of P2 the lab takes before giving up on
// it: more than the delivery limit allows a message that counts.
const guard = DeliveryLimit + 3

// limit is part (c).
func limit(ctx context.Context, env *lesson.Env) (outcome, error) {
	env.Phase(fmt.Sprintf("(c) The delivery limit (x-delivery-limit %d): P1 fails and is "+
		"rejected every time, P2 fails and is nacked every time", DeliveryLimit))
	out, err := runJob(ctx, env, job{
		queue: LimitQueue, retryType: TypeAll, lo: MinDelay, hi: MaxDelay, tasks: []string{"P1", "P2"},
		settle: func(task string) Settle {
			if task == "P2" {
				return Nack
			}
			return Reject
		},
		fails: func(string, int, time.Duration) error { return errFailing },
		guard: guard,
	})
	if err != nil {
		return out, err
	}
	env.Report(limitTable(out))
	return out, nil
}

// beside is part (d): part (a)'s load through Q19's TTL wait queues,
// measured there and set beside part (a).
func beside(ctx context.Context, env *lesson.Env, a measured) (q19.Stall, error) {
	env.Phase(fmt.Sprintf("(d) W1–W5 rate-limited for %s, WH healthy: Q19's TTL wait queues, "+
		"the same load", dur(q19.LimitFor)))
	w, err := q19.StallThroughWaitQueues(ctx, env, "W")
	if err != nil {
		return w, err
	}
	env.Report(besideTable(a, w))
	return w, nil
}

package q19

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/seeds/birthday"
)

// Part (b): five messages S1–S5 hit the rate limit for limitFor; a
// healthy message H is published right behind them. With the timer before
// the nack the five hold all five slots while they wait, and H waits for
// a free one; with the wait queues a failure leaves its slot at once.

// limitFor is how long the mail API rate-limits S1–S5 (lesson time from
// the part's start).
const limitFor = 30 * time.Second

// stalled is what one strategy of part (b) measured.
type stalled struct {
	name     string
	healthy  string        // H's task id
	firstH   time.Duration // when H's first attempt started
	beforeH  int           // attempts at S1–S5 that started before H's first
	attempts int           // attempts at S1–S5
	maxCount int           // the largest retry count a message carried; -1: no headers
	quorum   bool          // run on a quorum queue (the seed's type): deliveryCount is read
	version  string        // the broker's, where quorum
	// deliveryCount is the largest x-delivery-count a delivery carried
	// (-1: none); read only on the quorum queue.
	deliveryCount int
	redelivered   int           // deliveries with the redelivered flag
	lastSent      time.Duration // when the last of S1–S5 was sent
}

// stall runs part (b) with both strategies.
func stall(ctx context.Context, env *lesson.Env) error {
	var out []stalled
	for _, st := range []struct {
		strategy
		prefix string
	}{{timerNack, "S"}, {waitQueues, "W"}} {
		env.Phase(fmt.Sprintf("(b) %s1–%s5 rate-limited for %s, %sH healthy: %s",
			st.prefix, st.prefix, limitFor, st.prefix, st.name))
		m, err := runStall(ctx, env, st.strategy, st.prefix)
		if err != nil {
			return err
		}
		out = append(out, m)
	}
	version := ""
	if env.Stream.Backend() == lab.Rabbit { // memory has no queue types
		q, err := quorumStall(ctx, env)
		if err != nil {
			return err
		}
		out = slices.Insert(out, 1, q) // beside the classic queue's timer
		version = q.version
	}
	env.Report(stallTable(out, version))
	if env.Stream.Backend() != lab.Rabbit {
		return nil
	}
	quorum, err := quorumReturns(ctx, env)
	if err != nil {
		return err
	}
	env.Report(quorum)
	return nil
}

// runStall runs the rate-limited load with st and measures it.
func runStall(ctx context.Context, env *lesson.Env, st strategy, prefix string) (stalled, error) {
	var tasks []string
	for i := range birthday.Prefetch {
		tasks = append(tasks, fmt.Sprintf("%s%d", prefix, i+1))
	}
	m := stalled{name: st.name, healthy: prefix + "H", firstH: -1}
	tasks = append(tasks, m.healthy)
	fails := func(task string, _ int, at time.Duration) error {
		if task != m.healthy && at < limitFor {
			return birthday.ErrRateLimit
		}
		return nil
	}
	rows, err := runLoad(ctx, env, tasks, fails, st)
	if env.Stream.Backend() != lab.Rabbit {
		m.maxCount = -1
	}
	for _, r := range rows {
		if r.redelivered {
			m.redelivered++
		}
		if m.maxCount >= 0 {
			m.maxCount = max(m.maxCount, r.count)
		}
		switch {
		case r.task == m.healthy:
			if m.firstH < 0 {
				m.firstH, m.beforeH = r.at, m.attempts
			}
		case r.err == nil:
			m.attempts++
			m.lastSent = max(m.lastSent, r.at)
		default:
			m.attempts++
		}
	}
	return m, err
}

package rabbit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
)

// DelayStats summarise how late a wait queue delivered: the error is the
// time from publishing a message to receiving it from the queue the wait
// queue dead-letters into, minus the TTL.
type DelayStats struct {
	TTL      time.Duration // the real TTL measured
	N        int           // messages measured
	P50, P99 time.Duration // error percentiles
	Min, Max time.Duration
}

// String formats the stats on one line.
func (d DelayStats) String() string {
	return fmt.Sprintf("wait queue TTL %v, %d messages: late by p50 %v, p99 %v (min %v, max %v)",
		d.TTL, d.N, d.P50.Round(10*time.Microsecond), d.P99.Round(10*time.Microsecond), d.Min.Round(10*time.Microsecond), d.Max.Round(10*time.Microsecond))
}

// MeasureWaitDelay declares a private wait queue with real TTL ttl that
// dead-letters into a target queue, publishes n confirmed messages spaced
// by gap, and measures how late each arrives at a consumer of the target.
// ttl is lesson time scaled by s.Clock (open s at speed 1 to measure real
// TTLs). The queues are declared on s and deleted by s.Close.
func MeasureWaitDelay(ctx context.Context, s *Session, ttl time.Duration, n int, gap time.Duration) (DelayStats, error) {
	if n <= 0 || ttl <= 0 {
		return DelayStats{}, errors.New("latency: need n > 0 and a positive TTL")
	}
	topo := flow.Topology{Queues: []flow.Queue{
		{Name: "latency.wait", Role: flow.Wait, TTL: ttl, DeadLetterTo: "latency.target"},
		{Name: "latency.target", Role: flow.Work},
	}}
	if err := s.Topo().Declare(ctx, topo); err != nil {
		return DelayStats{}, err
	}
	var mu sync.Mutex // the broker orders publish before delivery, but the race detector cannot see that
	sent := make([]time.Time, n)
	real := s.Clock.Real(ttl)
	lateness := make(chan time.Duration, n)
	c, err := s.Consume(ctx, ConsumerOptions{Queue: "latency.target", Actor: "latency", Prefetch: 64}, func(_ context.Context, d *Delivery) {
		arrived := time.Now()
		i, err := strconv.Atoi(d.Task)
		_ = d.Ack()
		if err == nil && i >= 0 && i < n {
			mu.Lock()
			at := sent[i]
			mu.Unlock()
			select { // a redelivered duplicate must not block the handler
			case lateness <- arrived.Sub(at) - real:
			default:
			}
		}
	})
	if err != nil {
		return DelayStats{}, err
	}
	defer c.Stop()
	pub, err := s.Publisher(ctx)
	if err != nil {
		return DelayStats{}, err
	}
	defer pub.Close()
	for i := range n {
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if err := pub.Publish(ctx, "latency.wait", strconv.Itoa(i), nil); err != nil {
			return DelayStats{}, err
		}
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	errs := make([]time.Duration, 0, n)
	for len(errs) < n {
		select {
		case d := <-lateness:
			errs = append(errs, d)
		case <-ctx.Done():
			return DelayStats{}, fmt.Errorf("latency: %d of %d messages arrived: %w", len(errs), n, ctx.Err())
		}
	}
	slices.Sort(errs)
	return DelayStats{TTL: real, N: n, P50: percentile(errs, 50), P99: percentile(errs, 99), Min: errs[0], Max: errs[n-1]}, nil
}

// percentile returns the p-th percentile (nearest rank) of sorted values.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank-1, 0)]
}

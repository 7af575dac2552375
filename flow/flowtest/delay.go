package flowtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
)

// delayQ is the suite's delay queue: no queue TTL, each message carries
// its own expiration, and it dead-letters back to work.
const delayQ = "work.delay"

// The two delays of the head-of-line case, in lesson time.
const (
	longDelay  = 1500 * time.Millisecond
	shortDelay = 100 * time.Millisecond
)

// delayQueueExpiresOnlyItsHead retries L with a long delay, then S with a
// short one, through the same delay queue (flow.RetryAfter): S comes back
// only after L, because only the head expires (on RabbitMQ as measured on
// 3.10.8; in memory by design). The configured delays are each message's
// own.
func delayQueueExpiresOnlyItsHead(t *testing.T, cfg Config) {
	h := open(t, cfg)
	var order []string // second deliveries, in order; one consumer writes it
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker", RetryHeader: "retry-count",
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			if d.Attempt > 1 {
				order = append(order, d.Task)
				_ = h.attempt(d, false)
				return flow.Ack()
			}
			err := h.attempt(d, true)
			if d.Task == "L" {
				return flow.RetryAfter(delayQ, longDelay, err)
			}
			return flow.RetryAfter(delayQ, shortDelay, err)
		}}))
	events := h.run(t, work, "L", "S")
	assert.Equal(t, []string{"L", "S"}, order, "S's short delay expired behind L's long one")
	for task, delay := range map[string]time.Duration{"L": longDelay, "S": shortDelay} {
		waits := labtest.Of(events, task, lab.Scheduled)
		require.Len(t, waits, 1, task)
		assert.Equal(t, delayQ, waits[0].Via, task)
		assert.Equal(t, work, waits[0].To, "the delay queue dead-letters back to work")
		assert.Equal(t, delay.Milliseconds(), waits[0].DelayMs, "%s's own expiration", task)
		assert.True(t, strings.HasPrefix(waits[0].Note, flow.ExpirationNote), waits[0].Note)
		fate, n := labtest.Summary(t, events, task)
		assert.Equal(t, []any{lab.FateDone, 2}, []any{fate, n}, task)
	}
	labtest.AssertAccounted(t, events)
}

// retryAfterNeedsItsDelayQueue: a delay belongs to a delay queue, and a
// wait queue's TTL is its own: a RetryAfter into a wait queue is the
// lesson's mistake, reported and lost, as is a plain Retry into a delay
// queue (no expiration: it would never come back).
func retryAfterNeedsItsDelayQueue(t *testing.T, cfg Config) {
	h := open(t, cfg)
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker", RetryHeader: "retry-count",
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			if d.Task == "W" {
				return flow.RetryAfter(wait, time.Second, errors.New("x"))
			}
			return flow.Retry(delayQ, errors.New("x"))
		}}))
	require.NoError(t, h.b.Publish(h.ctx, "Producer", work, "W"))
	require.NoError(t, h.b.Publish(h.ctx, "Producer", work, "D"))
	require.ErrorIs(t, h.b.Wait(h.ctx), flow.ErrNoDelay)
	h.stream.Finish()
	for _, task := range []string{"W", "D"} {
		fate, _ := labtest.Summary(t, h.rec.Events(), task)
		assert.Equal(t, lab.FateLost, fate, task)
	}
}

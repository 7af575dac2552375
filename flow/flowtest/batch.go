package flowtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
)

// prefetchHoldsUpToItsWindow: a consumer whose handler is stuck on its
// first delivery holds its prefetch window and no more; the rest stay in
// the queue, where anyone can count them.
func prefetchHoldsUpToItsWindow(t *testing.T, cfg Config) {
	h := open(t, cfg)
	release := make(chan struct{})
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker", Prefetch: 3,
		Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
			select {
			case <-release:
			case <-ctx.Done():
			}
			_ = h.attempt(d, false)
			return flow.Ack()
		}}))
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		require.NoError(t, h.b.Publish(h.ctx, "Producer", work, id))
	}
	depth := func() int {
		n, err := h.inspect(t).Depth(h.ctx, work)
		require.NoError(t, err)
		return n
	}
	left := depth()
	for i := 0; i < 200 && left != 2; i++ {
		time.Sleep(25 * time.Millisecond)
		left = depth()
	}
	assert.Equal(t, 2, left, "5 published, 3 in the consumer's window")
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, 2, depth(), "a stuck handler takes no more than its window")
	close(release)
	require.NoError(t, h.b.Wait(h.ctx))
	h.stream.Finish()
	for _, r := range labtest.Fates(h.rec.Events()) {
		assert.Equal(t, lab.FateDone, r.Fate, r.ID)
	}
	labtest.AssertAccounted(t, h.rec.Events())
}

// batches records what a batch handler was given, and when (lesson time).
type batches struct {
	mu    sync.Mutex
	sizes []int
	at    []time.Duration
}

func (b *batches) see(clock lab.Clock, ds []*flow.Delivery) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sizes = append(b.sizes, len(ds))
	b.at = append(b.at, clock.Elapsed())
}

// batchUpToSizeOrWait: seven tasks to a batch consumer of 3 or 1 s give
// full batches of 3 and a last one the wait flushes; on a backend that
// keeps exact time, [3 3 1] with the last a second after the first two.
func batchUpToSizeOrWait(t *testing.T, cfg Config) {
	h := open(t, cfg)
	batcher := h.batcher(t)
	var got batches
	require.NoError(t, batcher.ConsumeBatch(h.ctx, flow.Consumer{Queue: work, Actor: "Batcher"}, flow.Batch{
		Size: 3, Wait: time.Second,
		Handle: func(_ context.Context, ds []*flow.Delivery) []flow.Decision {
			got.see(h.stream.Clock(), ds)
			decs := make([]flow.Decision, len(ds))
			for i, d := range ds {
				_ = h.attempt(d, false)
				decs[i] = flow.Ack()
			}
			return decs
		}}))
	events := h.run(t, work, "a", "b", "c", "d", "e", "f", "g")
	got.mu.Lock()
	defer got.mu.Unlock()
	total := 0
	for _, n := range got.sizes {
		assert.LessOrEqual(t, n, 3, "never more than Size")
		total += n
	}
	assert.Equal(t, 7, total, "every task in exactly one batch")
	if flow.FeaturesOf(h.b).ExactTime {
		assert.Equal(t, []int{3, 3, 1}, got.sizes)
		assert.Equal(t, []time.Duration{0, 0, time.Second}, got.at, "the last batch waited its second")
	}
	for _, r := range labtest.Fates(events) {
		assert.Equal(t, lab.FateDone, r.Fate, r.ID)
	}
	labtest.AssertAccounted(t, events)
}

// batchKeepsASmallerPrefetch: with KeepPrefetch, a batch consumer of 3
// at prefetch 2 is never handed more than 2 at once, so no batch fills and
// each waits out its Wait (lesson Q23); every task is still settled.
func batchKeepsASmallerPrefetch(t *testing.T, cfg Config) {
	h := open(t, cfg)
	batcher := h.batcher(t)
	var got batches
	require.NoError(t, batcher.ConsumeBatch(h.ctx, flow.Consumer{Queue: work, Actor: "Batcher", Prefetch: 2},
		flow.Batch{Size: 3, Wait: time.Second, KeepPrefetch: true,
			Handle: func(_ context.Context, ds []*flow.Delivery) []flow.Decision {
				got.see(h.stream.Clock(), ds)
				decs := make([]flow.Decision, len(ds))
				for i, d := range ds {
					_ = h.attempt(d, false)
					decs[i] = flow.Ack()
				}
				return decs
			}}))
	events := h.run(t, work, "a", "b", "c", "d", "e")
	got.mu.Lock()
	defer got.mu.Unlock()
	total := 0
	for _, n := range got.sizes {
		assert.LessOrEqual(t, n, 2, "never more than the prefetch")
		total += n
	}
	assert.Equal(t, 5, total, "every task in exactly one batch")
	if flow.FeaturesOf(h.b).ExactTime {
		assert.Equal(t, []int{2, 2, 1}, got.sizes)
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, got.at,
			"each batch waited its second")
	}
	labtest.AssertAccounted(t, events)
}

// batchSettlesEachOnItsOwn: one batch, four decisions, each carried out
// on its own delivery: an ack, a retry (which comes back in a later
// batch), a park and a drop.
func batchSettlesEachOnItsOwn(t *testing.T, cfg Config) {
	h := open(t, cfg)
	batcher := h.batcher(t)
	seen := attempts{} // only the batch handler writes it, read after Wait
	require.NoError(t, batcher.ConsumeBatch(h.ctx, flow.Consumer{Queue: work, Actor: "Batcher"}, flow.Batch{
		Size: 4, Wait: time.Second,
		Handle: func(_ context.Context, ds []*flow.Delivery) []flow.Decision {
			decs := make([]flow.Decision, len(ds))
			for i, d := range ds {
				seen.see(d)
				switch d.Task {
				case "ack":
					_ = h.attempt(d, false)
					decs[i] = flow.Ack()
				case "retry":
					if err := h.attempt(d, d.Attempt == 1); err != nil {
						decs[i] = flow.Retry(wait, err)
					} else {
						decs[i] = flow.Ack()
					}
				case "park":
					decs[i] = flow.Park(dlq, "poison")
				default:
					decs[i] = flow.Drop("gave up")
				}
			}
			return decs
		}}))
	events := h.run(t, work, "ack", "retry", "park", "drop")
	want := map[string]lab.Fate{"ack": lab.FateDone, "retry": lab.FateDone, "park": lab.FateDead, "drop": lab.FateDropped}
	for task, fate := range want {
		got, _ := labtest.Summary(t, events, task)
		assert.Equal(t, fate, got, task)
	}
	assert.Equal(t, []int{1, 2}, seen["retry"], "the retried one came back alone, its attempt counted")
	held, err := h.inspect(t).Peek(h.ctx, dlq, 10)
	require.NoError(t, err)
	require.Len(t, held, 1)
	assert.Equal(t, "park", held[0].Task)
	labtest.AssertAccounted(t, events)
}

// policiesRunOnEveryBackend: the shared handler policy (flow.Retries)
// gives the same fates and attempts everywhere: a retry budget of 3, a
// permanent error parked at its first attempt.
func policiesRunOnEveryBackend(t *testing.T, cfg Config) {
	h := open(t, cfg)
	policy := flow.Retries{Via: wait, DLQ: dlq, Max: 3}
	seen := attempts{}
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker",
		Handle: policy.Handler(func(_ context.Context, d *flow.Delivery) error {
			seen.see(d)
			return h.stream.Attempt(d.Event("Worker"), func() error {
				switch d.Task {
				case "perm":
					return fmt.Errorf("no such mailbox: %w", flow.Permanent(errors.New("550")))
				case "flaky":
					return errors.New("timeout")
				}
				return nil
			})
		})}))
	events := h.run(t, work, "ok", "flaky", "perm")
	assert.Equal(t, []int{1, 2, 3}, seen["flaky"], "three attempts, then parked")
	assert.Equal(t, []int{1}, seen["perm"], "a permanent error spends no retry")
	for task, fate := range map[string]lab.Fate{"ok": lab.FateDone, "flaky": lab.FateDead, "perm": lab.FateDead} {
		got, _ := labtest.Summary(t, events, task)
		assert.Equal(t, fate, got, task)
	}
	labtest.AssertAccounted(t, events)
}

// batcher is the backend's Batcher: every backend the suite runs has one.
func (h *harness) batcher(t *testing.T) flow.Batcher {
	b, ok := h.b.(flow.Batcher)
	require.True(t, ok, "%s is no flow.Batcher", h.b.Kind())
	return b
}

package rabbit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// republishLoop sends one message round seed 000's loop rounds times, the
// way a worker counting its own retries does: it republishes each delivery
// to the wait queue itself (with headers made by keep from the received
// ones plus x-retries) and acks the original, so the broker never sees a
// reject. It returns the deliveries in order.
func republishLoop(t *testing.T, s *rabbit.Session, task string, rounds int, keep func(amqp.Table) amqp.Table) []*rabbit.Delivery {
	ctx := testCtx(t)
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	defer pub.Close()
	got := make(chan *rabbit.Delivery, rounds+1)
	seen := 0 // only the handler's goroutine touches it
	c, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: emailQueue, Actor: "Header-Worker"}, func(ctx context.Context, d *rabbit.Delivery) {
		seen++
		got <- d
		if seen > rounds {
			assert.NoError(t, d.Ack())
			return
		}
		headers := rabbit.WithRetry(keep(d.Headers), rabbit.Retries(d.Headers)+1, "attempt failed")
		assert.NoError(t, pub.Republish(ctx, emailWait, d, headers))
		assert.NoError(t, d.Ack())
	})
	require.NoError(t, err)
	defer c.Stop()
	require.NoError(t, pub.Publish(ctx, emailQueue, task, nil))
	var out []*rabbit.Delivery
	for len(out) <= rounds {
		select {
		case d := <-got:
			require.Equal(t, task, d.Task)
			out = append(out, d)
		case <-ctx.Done():
			t.Fatalf("%s: the loop stopped after %d deliveries", task, len(out))
		}
	}
	return out
}

// TestRepublishedXDeathOnThisBroker measures what the broker does with an
// x-death header a client sends back. A message that went round the wait
// queue once by a reject (so it carries x-death) is then republished by
// the worker twice: once with the headers it received, once without the
// broker's headers. x-retries counts 1, 2, 3 either way.
func TestRepublishedXDeathOnThisBroker(t *testing.T) {
	t.Run("test broker", func(t *testing.T) { assertRepublishedXDeath(t, rabbittest.Session(t, 20)) })
	t.Run("4.3", func(t *testing.T) {
		url, _ := rabbittest.NeedVersion(t, "4.3")
		assertRepublishedXDeath(t, sessionOn(t, url, 20))
	})
}

// assertRepublishedXDeath republishes a message three times through a
// wait queue on s's broker, with the headers it came with and without,
// and holds what that broker's version does with the copied x-death.
func assertRepublishedXDeath(t *testing.T, s *rabbit.Session) {
	require.NoError(t, s.Topo().Declare(testCtx(t), emailLoopTopology(time.Second)))
	wait := s.Names.Of(emailWait)
	version, _ := s.Connection().Properties["version"].(string)
	t.Logf("RabbitMQ %s", version)

	expired := func(ds []*rabbit.Delivery) (counts []int64, retries []int) {
		for _, d := range ds {
			counts = append(counts, d.Deaths.Count(wait))
			retries = append(retries, rabbit.Retries(d.Headers))
		}
		return counts, retries
	}

	copied := republishLoop(t, s, "copied", 3, func(h amqp.Table) amqp.Table { return h })
	stripped := republishLoop(t, s, "stripped", 3, rabbit.WithoutBrokerHeaders)

	copiedCounts, copiedRetries := expired(copied)
	strippedCounts, strippedRetries := expired(stripped)
	t.Logf("x-death count in the wait queue per delivery: copied %v, stripped %v", copiedCounts, strippedCounts)
	assert.Equal(t, []int{0, 1, 2, 3}, copiedRetries, "x-retries counts whatever the broker does")
	assert.Equal(t, []int{0, 1, 2, 3}, strippedRetries)
	assert.Equal(t, []int64{0, 1, 1, 1}, strippedCounts, "without the old header the broker starts a new x-death every round")
	for _, d := range append(copied, stripped...) {
		assert.Zero(t, d.Deaths.Reason("rejected"), "nobody rejected: a count of rejects says attempt 1 forever")
	}
	switch {
	case supportsClientXDeath(version):
		assert.Equal(t, []int64{0, 1, 2, 3}, copiedCounts, "this broker reads a client's x-death and keeps counting")
	case strings.HasPrefix(version, "4."):
		assert.Equal(t, []int64{0, 1, 1, 1}, copiedCounts, "4.x ignores a client's x-death: every round starts anew")
	default:
		t.Logf("RabbitMQ %s: the copied x-death counted %v (not asserted: 3.13.0-3.13.2 treat x- headers as the broker's)", version, copiedCounts)
	}
}

// supportsClientXDeath: RabbitMQ up to 3.12 and from 3.13.3 on the 3.13
// line interpret an x-death header published by a client.
func supportsClientXDeath(version string) bool {
	var major, minor, patch int
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch); err != nil {
		return false
	}
	return major == 3 && (minor <= 12 || minor == 13 && patch >= 3)
}

// TestPeekLeavesMessagesInPlace: basic.get without an ack shows the head
// of a queue and hands it back unchanged, in order.
func TestPeekLeavesMessagesInPlace(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "dlq", Role: flow.DLQ}}}))
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	defer pub.Close()
	for _, id := range []string{"A", "B", "C"} {
		require.NoError(t, pub.Publish(ctx, "dlq", id, nil))
	}
	for range 2 { // twice: the first peek must have put everything back
		got, err := s.Guest().Peek(ctx, "dlq", 2)
		require.NoError(t, err)
		require.Len(t, got, 2, "at most max messages")
		assert.Equal(t, []string{"A", "B"}, []string{got[0].Task, got[1].Task})
		assert.Equal(t, "dlq", got[0].Queue)
		// The broker requeues what a closed channel held after close-ok,
		// a loaded broker measurably later: Peek returns once it has.
		n, err := s.Topo().Depth(ctx, "dlq")
		require.NoError(t, err)
		assert.Equal(t, 3, n, "peeking takes nothing away")
	}
	all, err := s.Guest().Peek(ctx, "dlq", 10)
	require.NoError(t, err)
	assert.Len(t, all, 3, "an emptied queue ends the peek early")
}

func TestRetryHeaders(t *testing.T) {
	orig := amqp.Table{"x-death": []any{amqp.Table{"count": int64(2)}}, "x-first-death-queue": "q", "keep": "me"}
	h := rabbit.WithRetry(orig, 3, "db_error: connection timeout")
	assert.Equal(t, 3, rabbit.Retries(h))
	assert.Equal(t, "db_error: connection timeout", rabbit.RetryReason(h))
	assert.Equal(t, "me", h["keep"])
	assert.Contains(t, h, "x-death", "WithRetry copies every other header")
	assert.NotContains(t, orig, rabbit.RetriesHeader, "the original table is not changed")
	assert.Zero(t, rabbit.Retries(orig))
	assert.Zero(t, rabbit.Retries(amqp.Table{rabbit.RetriesHeader: "three"}), "not an integer")

	fresh := rabbit.WithoutBrokerHeaders(h)
	assert.NotContains(t, fresh, "x-death")
	assert.NotContains(t, fresh, "x-first-death-queue")
	assert.Equal(t, 3, rabbit.Retries(fresh), "the worker's own headers stay")
	assert.Contains(t, h, "x-death", "the input is not changed")
}

// BenchmarkRetryHandoff measures what one retry costs the worker on the
// real broker: rejecting a delivery (the broker dead-letters it into the
// wait queue) against republishing a copy with x-retries, waiting for the
// publisher confirm and acking the original. ns/op is per message, from
// delivery to the message sitting in the wait queue.
func BenchmarkRetryHandoff(b *testing.B) {
	for _, mode := range []string{"reject", "republish"} {
		b.Run(mode, func(b *testing.B) {
			s := rabbittest.Session(b, 1)
			ctx := context.Background()
			require.NoError(b, s.Topo().Declare(ctx, emailLoopTopology(time.Hour))) // nothing comes back during the run
			pub, err := s.Publisher(ctx)
			require.NoError(b, err)
			defer pub.Close()
			for i := range b.N {
				require.NoError(b, pub.Publish(ctx, emailQueue, fmt.Sprint(i), nil))
			}
			done := make(chan struct{})
			handled := 0
			b.ResetTimer()
			c, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: emailQueue, Actor: "bench", Prefetch: 1}, func(ctx context.Context, d *rabbit.Delivery) {
				if mode == "reject" {
					_ = d.Reject()
				} else {
					if err := pub.Republish(ctx, emailWait, d, rabbit.WithRetry(d.Headers, 1, "bench")); err != nil {
						b.Error(err)
					}
					_ = d.Ack()
				}
				if handled++; handled == b.N {
					close(done)
				}
			})
			require.NoError(b, err)
			<-done
			for { // the last reject is asynchronous: wait until the broker has moved them all
				n, err := s.Topo().Depth(ctx, emailWait)
				require.NoError(b, err)
				if n == b.N {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			b.StopTimer()
			c.Stop()
		})
	}
}

// TestRepublishOutlivesALostChannel: the session's connection drops while
// a worker holds a delivery it means to park (a republish to the DLQ).
// The republish reopens its channel on a fresh connection and goes
// through, once; before, it failed on the dead channel, the delivery went
// back to its queue, and every redelivery failed the same way (a hot loop
// the fault suite saw 23,000 times in 90 s).
func TestRepublishOutlivesALostChannel(t *testing.T) {
	s := rabbittest.Session(t, 20)
	ctx := testCtx(t)
	stream, events := recorded()
	b, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	require.NoError(t, b.Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}, {Name: "dlq", Role: flow.DLQ}}}))
	var mu sync.Mutex
	handled := 0
	published := make(chan struct{}) // A's own publish is confirmed: only the republish meets the drop
	require.NoError(t, b.Consume(ctx, flow.Consumer{Queue: "work", Actor: "W", RetryHeader: rabbit.RetryCountHeader,
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			mu.Lock()
			handled++
			mu.Unlock()
			<-published
			assert.NoError(t, s.Connection().Close(), "the publisher's connection drops")
			return flow.Park("dlq", "failed")
		}}))
	require.NoError(t, b.Publish(ctx, "Producer", "work", "A"))
	close(published)
	require.NoError(t, b.Wait(ctx))
	mu.Lock()
	assert.Equal(t, 1, handled, "handled once: no redelivery loop")
	mu.Unlock()
	assert.Len(t, labtest.Of(events(), "A", lab.DeadLettered), 1)
	depth, err := b.Depth(ctx, "dlq")
	require.NoError(t, err)
	assert.Equal(t, 1, depth, "A waits in the DLQ")
	require.NoError(t, b.Close(ctx))
}

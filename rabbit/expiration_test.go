package rabbit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

func TestExpirationIsRealMilliseconds(t *testing.T) {
	assert.Equal(t, "250", rabbit.Expiration(lab.NewClock(20), 5*time.Second))
	assert.Equal(t, "1500", rabbit.Expiration(lab.NewClock(1), 1500*time.Millisecond))
	assert.Equal(t, "0", rabbit.Expiration(lab.NewClock(1), -time.Second), "a past delay expires at once")
}

func TestDelayQueueNeedsADeadLetterRoute(t *testing.T) {
	assert.Error(t, flow.Topology{Queues: []flow.Queue{{Name: "d", Role: flow.Delay}}}.Check())
	assert.NoError(t, flow.Topology{Queues: []flow.Queue{
		{Name: "d", Role: flow.Delay, DeadLetterTo: "w"}, {Name: "w", Role: flow.Work},
	}}.Check())
}

// TestPerMessageTTLExpiresOnlyAtTheHead publishes a message with a long
// expiration, then one with a short one, into a delay queue: the broker
// expires messages only at the head, so the short one comes out after the
// long one, not after its own TTL. Headers travel through dead-lettering.
func TestPerMessageTTLExpiresOnlyAtTheHead(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{
		{Name: "delay", Role: flow.Delay, DeadLetterTo: "target"},
		{Name: "target", Role: flow.Work},
	}}))
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	defer pub.Close()

	type arrival struct {
		task   string
		at     time.Time
		deaths rabbit.Deaths
		header any
	}
	var mu sync.Mutex
	var got []arrival
	both := make(chan struct{})
	_, err = s.Consume(ctx, rabbit.ConsumerOptions{Queue: "target", Actor: "t", Prefetch: 4}, func(_ context.Context, d *rabbit.Delivery) {
		assert.NoError(t, d.Ack())
		mu.Lock()
		defer mu.Unlock()
		got = append(got, arrival{d.Task, time.Now(), d.Deaths, d.Headers["x-note"]})
		if len(got) == 2 {
			close(both)
		}
	})
	require.NoError(t, err)

	const long = 400 * time.Millisecond
	publish := func(task string, ttl time.Duration) time.Time {
		msg := rabbit.Publishing(task, nil)
		msg.Expiration = rabbit.Expiration(s.Clock, ttl)
		msg.Headers = amqp.Table{"x-note": "kept " + task}
		sent := time.Now()
		require.NoError(t, pub.PublishMessage(ctx, "delay", msg))
		return sent
	}
	longSent := publish("long", long)
	publish("short", 20*time.Millisecond)

	select {
	case <-both:
	case <-ctx.Done():
		t.Fatal("the delay queue never let both messages out")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"long", "short"}, []string{got[0].task, got[1].task}, "expiry happens in queue order")
	assert.GreaterOrEqual(t, got[1].at.Sub(longSent), long-5*time.Millisecond,
		"the short TTL was over long ago, but the message sat behind the long one")
	for _, a := range got {
		assert.Equal(t, int64(1), a.deaths.Reason("expired"), a.task)
		assert.Equal(t, int64(1), a.deaths.Count(s.Names.Of("delay")), a.task)
		assert.Equal(t, "kept "+a.task, a.header, "headers survive dead-lettering")
	}
}

package rabbit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// sessionOn opens a session on the broker at url with the lesson clock at
// speed, its queues deleted when the test ends.
func sessionOn(t *testing.T, url string, speed float64) *rabbit.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := rabbit.Open(ctx, url, rabbit.RunNames(), lab.NewClock(speed), rabbittest.Logger(t))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Close(ctx))
	})
	return s
}

// TestQuorumReturnsByVersion holds what a quorum queue counts when a
// message comes back, on each version. RabbitMQ 3.10.8 counts every
// return in x-delivery-count (0 on the first delivery) and has no default
// delivery limit. RabbitMQ 4.3 writes x-delivery-count only once a
// delivery failed: a basic.reject with requeue or a closed channel
// counts, a basic.nack with requeue does not; x-acquired-count counts
// every take; and a queue without x-delivery-limit drops the message
// after 20 failed deliveries (the 21st delivery's reject), while nacks go
// on for ever.
func TestQuorumReturnsByVersion(t *testing.T) {
	t.Parallel() // waits on the broker's redeliveries, under a prefix of its own
	const rounds, max = 3, 25
	want := map[string]struct {
		count, acquired map[rabbit.Return][]int64
		limit           map[rabbit.Return]int // deliveries before the queue dropped it; max: never
	}{
		"3.10": {
			count: map[rabbit.Return][]int64{rabbit.NackRequeue: {0, 1, 2, 3}, rabbit.RejectRequeue: {0, 1, 2, 3}, rabbit.ChannelClosed: {0, 1, 2, 3}},
			acquired: map[rabbit.Return][]int64{rabbit.NackRequeue: {-1, -1, -1, -1}, rabbit.RejectRequeue: {-1, -1, -1, -1},
				rabbit.ChannelClosed: {-1, -1, -1, -1}},
			limit: map[rabbit.Return]int{rabbit.NackRequeue: max, rabbit.RejectRequeue: max},
		},
		"4.3": {
			count: map[rabbit.Return][]int64{rabbit.NackRequeue: {-1, -1, -1, -1}, rabbit.RejectRequeue: {-1, 1, 2, 3}, rabbit.ChannelClosed: {-1, 1, 2, 3}},
			acquired: map[rabbit.Return][]int64{rabbit.NackRequeue: {-1, 1, 2, 3}, rabbit.RejectRequeue: {-1, 1, 2, 3},
				rabbit.ChannelClosed: {-1, 1, 2, 3}},
			limit: map[rabbit.Return]int{rabbit.NackRequeue: max, rabbit.RejectRequeue: 21},
		},
	}
	for line, w := range want {
		t.Run(line, func(t *testing.T) {
			url, _ := rabbittest.NeedVersion(t, line)
			s := sessionOn(t, url, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rs, err := s.Probes().Returns(ctx, rounds)
			require.NoError(t, err)
			for _, r := range rs {
				assert.Equal(t, w.count[r.Way], r.DeliveryCount, "x-delivery-count after %s", r.Way)
				assert.Equal(t, w.acquired[r.Way], r.Acquired, "x-acquired-count after %s", r.Way)
			}
			for way, limit := range w.limit {
				n, gone, err := s.Probes().Limit(ctx, way, max)
				require.NoError(t, err)
				assert.Equal(t, limit, n, "deliveries with %s", way)
				assert.Equal(t, limit < max, gone, "dropped after %d deliveries with %s", n, way)
			}
		})
	}
}

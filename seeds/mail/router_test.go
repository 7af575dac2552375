package mail

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestRouterGivesUpOnAHopThatKeepsFailing: a mail whose forward fails
// is requeued (the broker hands it out again as redelivered) until the
// hopTries-th failure, then rejected and reported lost with the reason,
// and nothing is left in mail.router: the router no longer spins on it.
func TestRouterGivesUpOnAHopThatKeepsFailing(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: RouterQueue, Role: flow.Work}}}))
	var rec labtest.Recorder
	stream := lab.NewStream("q11", lab.Rabbit, lab.NewClock(1), &rec)
	r := &Router{gen: 1, s: s, stream: stream}
	broken := errors.New("the next hop refused it")
	tries := make(chan bool, 2*hopTries) // redelivered, per delivery
	opts := rabbit.ConsumerOptions{Queue: RouterQueue, Actor: r.Name(), Prefetch: 1, Stream: stream}
	_, err := s.Consume(ctx, opts, func(_ context.Context, d *rabbit.Delivery) {
		tries <- d.Redelivered
		r.hopFailed(d, broken)
	})
	require.NoError(t, err)
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, RouterQueue, "m1", nil))

	for i := range hopTries {
		select {
		case redelivered := <-tries:
			assert.Equal(t, i > 0, redelivered, "try %d", i+1)
		case <-ctx.Done():
			t.Fatalf("the router tried %d times, want %d", i, hopTries)
		}
	}
	require.Eventually(t, func() bool { return len(labtest.OfKind(rec.Events(), lab.Lost)) > 0 }, 10*time.Second, 10*time.Millisecond,
		"the third failed try reports the mail lost")
	lost := labtest.OfKind(rec.Events(), lab.Lost)
	require.Len(t, lost, 1)
	assert.Equal(t, "m1", lost[0].Task)
	assert.Equal(t, "the router could not forward it in 3 tries: the next hop refused it", lost[0].Note)
	select {
	case <-tries:
		t.Fatalf("the router tried again after giving up")
	case <-time.After(300 * time.Millisecond): // the rejected mail would be back within a round trip
	}
	depth, err := s.Topo().Depth(ctx, RouterQueue)
	require.NoError(t, err)
	assert.Zero(t, depth, "the rejected mail left mail.router")
}

package rabbit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestPublishToADeletedQueueIsReturned: a publish to a queue deleted
// behind the run's back is ErrReturned (mandatory), not confirmed and
// dropped, also after the publisher reopened its channel; a publish to a
// queue that exists still goes through, and each publish gets only its
// own return.
func TestPublishToADeletedQueueIsReturned(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "kept", Role: flow.Work}, {Name: "gone", Role: flow.Work}}}))
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, "gone", "before", nil))
	deleteFromOutside(t, s.URL, s.Names.Of("gone"))

	err = pub.Publish(ctx, "gone", "after", nil)
	assert.True(t, errors.Is(err, rabbit.ErrReturned), "got %v", err)
	assert.Contains(t, err.Error(), s.Names.Of("gone"))
	assert.NoError(t, pub.Publish(ctx, "kept", "after", nil), "another publish is not taken for the returned one")

	require.NoError(t, pub.Close()) // the next publish finds its channel closed and reopens it
	err = pub.Publish(ctx, "gone", "reopened", nil)
	assert.True(t, errors.Is(err, rabbit.ErrReturned), "after a reopen: got %v", err)
	depth, err := s.Topo().Depth(ctx, "kept")
	require.NoError(t, err)
	assert.Equal(t, 1, depth)
}

// deleteFromOutside deletes broker queue name on a connection of its own.
func deleteFromOutside(t *testing.T, url, name string) {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDelete(name, false, false, false)
	require.NoError(t, err)
}

// TestRepublishReopensAClosedChannel: a republish on a publisher whose
// channel the broker closed opens a new one and goes through, instead of
// failing at once (which put the delivery back for a hot requeue loop).
func TestRepublishReopensAClosedChannel(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "src", Role: flow.Work}, {Name: "dst", Role: flow.Work}}}))
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, "src", "x", nil))
	conn, err := amqp.Dial(s.URL)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	got, ok, err := ch.Get(s.Names.Of("src"), true) // autoAck: the copy is what counts here
	require.NoError(t, err)
	require.True(t, ok)

	require.NoError(t, pub.Close()) // as a closed connection leaves it
	require.NoError(t, pub.Republish(ctx, "dst", &rabbit.Delivery{Delivery: got, Task: "x"}, amqp.Table{"k": "v"}))
	depth, err := s.Topo().Depth(ctx, "dst")
	require.NoError(t, err)
	assert.Equal(t, 1, depth)
}

// TestPublishGivesUpWithAFailedRun: once the run cannot go on (a consumed
// queue was deleted from outside), a publish that lost its channel is not
// tried again for another DefaultGiveUpAfter: it fails at once with the
// run's reason.
func TestPublishGivesUpWithAFailedRun(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}, {Name: "kept", Role: flow.Work}}}))
	_, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: "work", Actor: "W", Prefetch: 1}, func(context.Context, *rabbit.Delivery) {})
	require.NoError(t, err)
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	deleteFromOutside(t, s.URL, s.Names.Of("work"))
	require.Eventually(t, func() bool { return s.Err() != nil }, 10*time.Second, 10*time.Millisecond, "the run fails when its queue goes")

	require.NoError(t, pub.Close()) // a lost channel
	start := time.Now()
	err = pub.Publish(ctx, "kept", "late", nil)
	require.Error(t, err)
	assert.ErrorContains(t, err, s.Err().Error())
	assert.Less(t, time.Since(start), 5*time.Second, "no second wait for a broker the run gave up")
}

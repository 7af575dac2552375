package rabbit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// strangersAround fills seed queue q of a fresh session with, in order:
// a foreign message, task A, a malformed message with the run's app-id,
// task B. It returns the session, a connection of someone else's and the
// hold queue's name (deleted when the test ends).
func strangersAround(ctx context.Context, t *testing.T, q string) (*rabbit.Session, *amqp.Channel, string) {
	t.Helper()
	s := rabbittest.Session(t, 1)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: q, Role: flow.DLQ}}}))
	other := outsider(t)
	hold := s.Names.Run + ".foreign"
	t.Cleanup(func() { _, _ = outsider(t).QueueDelete(hold, false, false, false) })
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	publishConfirmed(ctx, t, other, s.Names.Of(q), amqp.Publishing{MessageId: "X", AppId: "someone-else", ContentType: "application/json", Body: []byte(`{"task":"X"}`)})
	require.NoError(t, pub.Publish(ctx, q, "A", nil))
	publishConfirmed(ctx, t, other, s.Names.Of(q), amqp.Publishing{MessageId: "Y", AppId: s.Names.Run, ContentType: "text/plain", Body: []byte(`{"task":"Y"}`)})
	require.NoError(t, pub.Publish(ctx, q, "B", nil))
	return s, other, hold
}

// TestSiftHoldsStrangersAndLeavesTheRunsTasks: Sift returns A and B in
// order, leaves them in the queue and moves the other two to the hold
// queue, each with its reason.
func TestSiftHoldsStrangersAndLeavesTheRunsTasks(t *testing.T) {
	ctx := testCtx(t)
	s, other, hold := strangersAround(ctx, t, "dlq")
	got, held, err := s.Guest().Sift(ctx, "dlq")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []string{"A", "B"}, []string{got[0].Task, got[1].Task})
	assert.Equal(t, 2, held)
	// The broker requeues what Sift's closed channel held on its own time:
	// a passive declare from another connection may come first.
	assert.Eventually(t, func() bool { return depthOf(t, other, s.Names.Of("dlq")) == 2 }, 5*time.Second, 10*time.Millisecond,
		"the run's tasks stay")
	assertHeldWithReasons(t, other, hold, map[string]string{"X": "not published by run", "Y": "malformed: content type"})
}

// TestEmptyCountsOnlyTheRunsTasks: Empty removes all four messages,
// counts A and B (or, asked for ids beginning "A", only A: B is the
// run's, acked away uncounted), and holds the other two.
func TestEmptyCountsOnlyTheRunsTasks(t *testing.T) {
	for ids, want := range map[string]int{"": 2, "A": 1} {
		t.Run(fmt.Sprintf("ids %q", ids), func(t *testing.T) {
			ctx := testCtx(t)
			s, other, hold := strangersAround(ctx, t, "work")
			n, err := s.Guest().Empty(ctx, "work", 4, ids)
			require.NoError(t, err)
			assert.Equal(t, want, n)
			assert.Equal(t, 0, depthOf(t, other, s.Names.Of("work")))
			assertHeldWithReasons(t, other, hold, map[string]string{"X": "not published by run", "Y": "malformed: content type"})
		})
	}
}

// assertHeldWithReasons checks that hold holds exactly the messages of
// want, each with a reason containing want's text.
func assertHeldWithReasons(t *testing.T, ch *amqp.Channel, hold string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for {
		d, ok, err := ch.Get(hold, false) // left unacked: the test deletes the queue
		require.NoError(t, err)
		if !ok {
			break
		}
		reason, _ := d.Headers[rabbit.ForeignReasonHeader].(string)
		got[d.MessageId] = reason
	}
	require.Len(t, got, len(want))
	for id, text := range want {
		assert.Contains(t, got[id], text, id)
	}
}

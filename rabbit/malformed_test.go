package rabbit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestPeekShowsOnlyTheRunsTasks: a DLQ holds a task of the run between a
// foreign message and a malformed one carrying the run's app-id. Peek
// returns the task alone and leaves all three in place.
func TestPeekShowsOnlyTheRunsTasks(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "dlq", Role: flow.DLQ}}}))
	other := outsider(t)
	publish := func(m amqp.Publishing) {
		publishConfirmed(ctx, t, other, s.Names.Of("dlq"), m)
	}
	publish(amqp.Publishing{MessageId: "X", AppId: "someone-else", ContentType: "application/json", Body: []byte(`{"task":"X"}`)})
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, "dlq", "A", nil))
	publish(amqp.Publishing{MessageId: "", AppId: s.Names.Run, ContentType: "application/json", Body: []byte(`{"task":""}`)})

	got, err := s.Guest().Peek(ctx, "dlq", 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "A", got[0].Task)
	// The broker requeues what a closed channel held on its own time: a
	// passive declare from another connection may come first.
	assert.Eventually(t, func() bool { return depthOf(t, other, s.Names.Of("dlq")) == 3 }, 5*time.Second, 10*time.Millisecond,
		"Peek leaves every message in place")

	// At the end the two strangers are held, not deleted with the DLQ.
	hold := s.Names.Run + ".foreign"
	defer func() { _, _ = other.QueueDelete(hold, false, false, false) }()
	require.NoError(t, s.Close(ctx))
	assert.Equal(t, 2, depthOf(t, other, hold))
}

// TestMalformedTaskOfTheRunIsHeld: a message with the run's app-id but
// no message id never reaches the handler (no event with an empty task);
// it waits in the hold queue with the reason.
func TestMalformedTaskOfTheRunIsHeld(t *testing.T) {
	s := heldBeforeA(t, amqp.Publishing{ContentType: "application/json", Body: []byte(`{"task":""}`)},
		"malformed: no message id")
	assert.Equal(t, 1, s.Guest().Foreign())
}

// TestHugeMessageIsHeld: 10 MB with the run's app-id is held by its
// size, whole, and the run's next task is handled after it.
func TestHugeMessageIsHeld(t *testing.T) {
	t.Parallel() // 10 MB through the broker and back: beside the waits
	body := `{"task":"big","pad":"` + strings.Repeat("x", 10<<20) + `"}`
	heldBeforeA(t, amqp.Publishing{MessageId: "big", ContentType: "application/json", Body: []byte(body)},
		fmt.Sprintf("malformed: a body of %d bytes", len(body)))
}

// heldBeforeA publishes m (with the run's app-id) and then task A into
// a queue of a fresh session, consumes it, and checks that the handler
// sees only A and that m waits in the hold queue, whole, with a reason
// containing reason.
func heldBeforeA(t *testing.T, m amqp.Publishing, reason string) *rabbit.Session {
	t.Helper()
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
	other := outsider(t)
	m.AppId = s.Names.Run
	publishConfirmed(ctx, t, other, s.Names.Of("work"), m)
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, "work", "A", nil))
	handled := make(chan string, 2)
	_, err = s.Consume(ctx, rabbit.ConsumerOptions{Queue: "work", Actor: "W"}, func(_ context.Context, d *rabbit.Delivery) {
		assert.NoError(t, d.Ack())
		handled <- d.Task
	})
	require.NoError(t, err)
	assert.Equal(t, "A", <-handled, "the malformed message came first and was held")
	hold := s.Names.Run + ".foreign"
	t.Cleanup(func() { _, _ = outsider(t).QueueDelete(hold, false, false, false) })
	held, ok, err := other.Get(hold, true)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Contains(t, held.Headers[rabbit.ForeignReasonHeader], reason)
	assert.Equal(t, len(m.Body), len(held.Body), "held whole")
	assert.Empty(t, handled)
	return s
}

package rabbit_test

import (
	"context"
	"errors"
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

// TestForgedCopyOfALiveTaskIsHeld: while task A waits out its retry in
// a wait queue, someone publishes a copy of it into the work queue with
// everything a reader of the broker can see: the run's app-id, A's
// message-id and a well-formed body. It used to be handled as one more
// attempt of A (Q24's a15-1 ended with 4 attempts instead of 3); it must
// be held in the run's hold queue, and A keep its two attempts.
func TestForgedCopyOfALiveTaskIsHeld(t *testing.T) {
	const speed = 1 // a 2 s wait: time enough to publish the copy into it
	s := rabbittest.Session(t, speed)
	ctx := testCtx(t)
	stream := lab.NewStream("test", lab.Rabbit, lab.NewClock(speed), lab.SinkFunc(func(lab.Event) {}))
	f, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	topo := flow.Topology{Queues: []flow.Queue{
		{Name: "work", Role: flow.Work, DeadLetterTo: "work.wait"},
		{Name: "work.wait", Role: flow.Wait, TTL: 2 * time.Second, DeadLetterTo: "work"},
	}}
	require.NoError(t, f.Declare(ctx, topo))
	var mu sync.Mutex
	var attempts []int
	waiting := make(chan struct{})
	require.NoError(t, f.Consume(ctx, flow.Consumer{Queue: "work", Actor: "Worker",
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			mu.Lock()
			defer mu.Unlock()
			attempts = append(attempts, d.Attempt)
			if d.Attempt == 1 && len(attempts) == 1 {
				close(waiting)
				return flow.Retry("work.wait", errors.New("the first attempt fails"))
			}
			stream.Emit(lab.Event{Kind: lab.Succeeded, Task: d.Task, Actor: "Worker", Attempt: d.Attempt})
			return flow.Ack()
		}}))
	require.NoError(t, f.Publish(ctx, "Producer", "work", "A"))

	<-waiting
	forger := rabbittest.Session(t, speed)
	ch, err := forger.Connection().Channel()
	require.NoError(t, err)
	require.NoError(t, ch.PublishWithContext(ctx, "", s.Names.Of("work"), false, false, amqp.Publishing{
		MessageId: "A", AppId: s.Names.Run, ContentType: "application/json", Body: []byte(`{"task":"A"}`)}))
	require.NoError(t, ch.Close())

	require.NoError(t, f.Wait(ctx))
	mu.Lock()
	assert.Equal(t, []int{1, 2}, attempts, "a forged copy was handled as an attempt")
	mu.Unlock()
	assert.Equal(t, 1, s.Guest().Foreign(), "the forged copy is moved to the hold queue")
	require.NoError(t, f.Close(context.WithoutCancel(ctx)))
}

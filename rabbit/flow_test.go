package rabbit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/flow/flowtest"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// flowSpeed makes the suite's 1 s wait queue a 50 ms one.
const flowSpeed = 20

// TestFlowContract runs the seam's shared suite on the broker mechanism,
// each case on a session with its own queue prefix.
func TestFlowContract(t *testing.T) {
	t.Parallel() // its cases wait on the broker's timers, each under a prefix of its own
	flowtest.Run(t, flowtest.Config{
		Speed: flowSpeed,
		Open: func(t *testing.T, ctx context.Context, stream *lab.Stream) flow.Backend {
			s := rabbittest.Session(t, flowSpeed)
			b, err := rabbit.NewFlow(ctx, s, stream)
			require.NoError(t, err)
			return b
		},
		Run: func(t *testing.T, name string, f func(*testing.T)) { t.Run(name, f) },
	})
}

// TestPublishToSurvivesALostChannel: a publish to an exchange after the
// broker closed the session's connection (and so the publisher's channel)
// reopens the channel and is confirmed, as Publish is. It failed with
// "channel/connection is not open" when PublishTo had a path of its own.
func TestPublishToSurvivesALostChannel(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	stream := lab.NewStream("test", lab.Rabbit, lab.NewClock(1), lab.SinkFunc(func(lab.Event) {}))
	f, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	topo := flow.Topology{
		Queues:    []flow.Queue{{Name: "mail", Role: flow.Work}},
		Exchanges: []flow.Exchange{{Name: "notify", Kind: flow.Topic}},
		Bindings:  []flow.Binding{{Exchange: "notify", Queue: "mail", Key: "mail.*"}},
	}
	require.NoError(t, f.Declare(ctx, topo))
	require.NoError(t, f.PublishTo(ctx, "API", "notify", "mail.welcome", "A"))

	require.NoError(t, s.Connection().Close()) // the publisher's channel goes with it
	require.NoError(t, f.PublishTo(ctx, "API", "notify", "mail.welcome", "B"))
	depth, err := f.Depth(ctx, "mail")
	require.NoError(t, err)
	assert.Equal(t, 2, depth, "both routed to mail")
	require.NoError(t, f.Close(ctx))
}

// TestALostRejectIsHandledAgain: a reject is a frame the broker never
// answers. When the connection dies with it written but unread, the
// broker hands the message out again, redelivered, in the queue it never
// left; the flow must handle it as the task it still is. It used to ack
// it away as the copy of a message it had settled, and the task stayed
// pending in a wait queue it never reached (the fault suite's close/q10
// on a busy machine). The proxy drops the reject, then cuts the line.
func TestALostRejectIsHandledAgain(t *testing.T) {
	t.Parallel()
	p := rabbittest.StartProxy(t, rabbittest.NeedBroker(t))
	s := rabbittest.SessionAt(t, p.URL(rabbittest.NeedBroker(t)), 1)
	ctx, f, stream, rec := recordedFlow(t, s, flow.Topology{Queues: []flow.Queue{
		{Name: "work", Role: flow.Work, DeadLetterTo: "wait"},
		{Name: "wait", Role: flow.Wait, TTL: 50 * time.Millisecond, DeadLetterTo: "next"},
		{Name: "next", Role: flow.Work},
	}})
	var deafened sync.Once
	require.NoError(t, f.Consume(ctx, flow.Consumer{Queue: "work", Actor: "W", Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
		deafened.Do(p.Deafen) // the reject this decision makes never arrives
		err := stream.Attempt(d.Event("W"), func() error { return errors.New("failed") })
		return flow.Retry("wait", err)
	}}))
	require.NoError(t, f.Consume(ctx, flow.Consumer{Queue: "next", Actor: "N", Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
		_ = stream.Attempt(d.Event("N"), func() error { return nil })
		return flow.Ack()
	}}))
	require.NoError(t, f.Publish(ctx, "test", "work", "A"))

	const nackFrame = 21 // header 7, basic.nack 4+8+1, frame end 1
	require.Eventually(t, func() bool { return p.Dropped() >= nackFrame }, 10*time.Second, time.Millisecond,
		"the worker's reject was written")
	p.Reset() // the broker requeues A, which it never saw rejected
	task, redelivered := settleOneRedelivery(t, ctx, f, stream, rec)
	assert.Equal(t, lab.FateDone, task.Fate, "A reached next and was acked there")
	assert.Equal(t, "work", redelivered.Queue, "handed out again where it was")
}

// TestARedeliveryInTheDLQLeavesTheTaskDead: a DLQ's consumer only
// reports a task whose fate was decided when it was dead-lettered. When
// the consumers' connections are cut while it holds the message, its ack
// fails and the broker hands the message out again there: a redelivered
// event, but no reopening, or nothing would settle the task again (compare
// 10's interrupted run waited on T08 until it stalled).
func TestARedeliveryInTheDLQLeavesTheTaskDead(t *testing.T) {
	t.Parallel()
	ctx, f, stream, rec := recordedFlow(t, rabbittest.Session(t, 1), flow.Topology{Queues: []flow.Queue{
		{Name: "work", Role: flow.Work, DeadLetterTo: "dlq"},
		{Name: "dlq", Role: flow.DLQ},
	}})
	require.NoError(t, f.Consume(ctx, flow.Consumer{Queue: "work", Actor: "W", Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
		err := stream.Attempt(d.Event("W"), func() error { return errors.New("failed") })
		return flow.Park("dlq", err.Error())
	}}))
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	require.NoError(t, f.Consume(ctx, flow.Consumer{Queue: "dlq", Actor: "D", Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
		stream.Emit(lab.Event{Kind: lab.Received, Task: d.Task, Queue: d.Queue, Actor: "D"})
		once.Do(func() { close(holding); <-release }) // its first delivery waits out the cut
		return flow.Ack()
	}}))
	require.NoError(t, f.Publish(ctx, "test", "work", "A"))

	select {
	case <-holding:
	case <-ctx.Done():
		t.Fatal("the DLQ's consumer never got A")
	}
	f.Interrupt()
	close(release) // its ack goes to a closed channel
	task, redelivered := settleOneRedelivery(t, ctx, f, stream, rec)
	assert.Equal(t, lab.FateDead, task.Fate, "parked in dlq, as before the cut")
	assert.Equal(t, "dlq", redelivered.Queue)
	assert.Len(t, labtest.OfKind(rec.Events(), lab.Received), 2, "the DLQ's consumer saw it twice")
	labtest.AssertAccounted(t, rec.Events())
}

// recordedFlow is a flow on s at speed 1 with topo declared, its events
// recorded, and the test's context.
func recordedFlow(t *testing.T, s *rabbit.Session, topo flow.Topology) (context.Context, *rabbit.Flow, *lab.Stream, *labtest.Recorder) {
	ctx := testCtx(t)
	rec := &labtest.Recorder{}
	stream := lab.NewStream("test", lab.Rabbit, lab.NewClock(1), rec)
	f, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	require.NoError(t, f.Declare(ctx, topo))
	return ctx, f, stream, rec
}

// settleOneRedelivery waits for f to settle, closes it, and returns the
// run's one task and the one redelivered event it must have had.
func settleOneRedelivery(t *testing.T, ctx context.Context, f *rabbit.Flow, stream *lab.Stream, rec *labtest.Recorder) (lab.TaskRecord, lab.Event) {
	t.Helper()
	require.NoError(t, f.Wait(ctx))
	require.NoError(t, f.Close(ctx))
	tasks := stream.Finish()
	require.Len(t, tasks, 1)
	redelivered := labtest.OfKind(rec.Events(), lab.Redelivered)
	require.Len(t, redelivered, 1, "the broker handed the task out again once")
	return tasks[0], redelivered[0]
}

package rabbit_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestScheduledExpirationIsNotAStall: a message the run published with a
// 5-minute expiration (seed 002's longest retry) waits out 15 s of real
// time at 20×, longer than the watchdog's 10 s real-time floor, and no
// task moves meanwhile. The wait was the run's own, so the run settles
// when the message comes back. Before the session counted expirations,
// Q14 at --speed 10 ended so: "no task made progress", A and E lost.
func TestScheduledExpirationIsNotAStall(t *testing.T) {
	t.Parallel() // waits on the broker's timer
	s := rabbittest.Session(t, 20)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{
		{Name: emailQueue, Role: flow.Work},
		{Name: emailWait, Role: flow.Delay, DeadLetterTo: emailQueue}, // seed 002's retry queue: no TTL of its own
	}}))
	stream, _ := recorded()
	_, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: emailQueue, Actor: "W"}, func(_ context.Context, d *rabbit.Delivery) {
		stream.Emit(lab.Event{Kind: lab.Succeeded, Task: d.Task, Queue: emailQueue, Actor: "W"})
		assert.NoError(t, d.Ack())
	})
	require.NoError(t, err)
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	msg := rabbit.Publishing("A", nil)
	msg.Expiration = rabbit.Expiration(s.Clock, 5*time.Minute) // 15 s real
	stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: emailWait})
	require.NoError(t, pub.PublishMessage(ctx, emailWait, msg))

	start := time.Now()
	require.NoError(t, s.Watch().WaitSettled(ctx, stream, nil))
	assert.GreaterOrEqual(t, time.Since(start), 14*time.Second, "A came back from its 5-minute wait, not before")
}

// TestStallAfterTimerSaysLessonTime: a run that says it waits 30 s of
// lesson time on a timer of its own (3 s real at 10×) and then never
// moves again is given up the watchdog's patience after that wait: 10 s
// of real time, which at 10× is 1m40s of lesson time, and the error says
// both (main said "10s of lesson time (10s real)" at 10×).
func TestStallAfterTimerSaysLessonTime(t *testing.T) {
	t.Parallel() // waits out the watchdog's patience
	s := rabbittest.Session(t, 10)
	stream, _ := recorded()
	stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: "nowhere"})
	before := s.Clock.Elapsed()
	s.Watch().Expect(30 * time.Second)
	after := s.Clock.Elapsed()
	start := time.Now()
	err := s.Watch().WaitSettled(testCtx(t), stream, nil)
	took := time.Since(start)
	require.ErrorIs(t, err, rabbit.ErrStalled)
	m := regexp.MustCompile(`for 1m40s of lesson time \(10s real at 10×\) after the last wait the run scheduled ended at (\S+); still pending: A;`).
		FindStringSubmatch(err.Error())
	require.NotNil(t, m, err.Error())
	ended, perr := time.ParseDuration(m[1])
	require.NoError(t, perr)
	// 30 s after Expect was called, on the lesson clock: when that was is
	// read around the call (a loaded machine once took 11 s of lesson
	// time, 1.1 s real, to get there from the session's start).
	assert.GreaterOrEqual(t, ended, before+30*time.Second-time.Millisecond, "30 s after Expect (rounded to the ms)")
	assert.LessOrEqual(t, ended, after+30*time.Second+time.Millisecond)
	assert.GreaterOrEqual(t, took, 13*time.Second, "the 3 s timer, then the 10 s patience")
	assert.Less(t, took, 60*time.Second, "a true stall still ends within its bound (13 s, and room for a loaded machine)")
}

// TestRejectIntoAWaitQueueIsNotAStall: a retry the broker carries out
// itself (a reject that the queue's dead-letter route takes into a wait
// queue) is a wait the run scheduled, though no publish of the run's
// shows it: a 30 s TTL at 2× is 15 s real, longer than the watchdog's
// floor, and the run settles when the message comes back.
func TestRejectIntoAWaitQueueIsNotAStall(t *testing.T) {
	t.Parallel() // waits on the broker's timer
	ctx, f, stream := waitingFlow(t, flow.Topology{Queues: []flow.Queue{
		{Name: "work", Role: flow.Work, DeadLetterTo: "wait"},
		{Name: "wait", Role: flow.Wait, TTL: 30 * time.Second, DeadLetterTo: "work"},
	}})
	require.NoError(t, f.Publish(ctx, "P", "work", "A"))
	settlesAfterTheWait(t, ctx, f, stream, 2)
}

// TestPublishRoutedIntoAWaitQueueIsNotAStall: a message the run publishes
// to an exchange that routes it into a wait queue (a 30 s TTL, 15 s real
// at 2×) waits on purpose; the session sees only the exchange, so the
// flow counts the TTL of the queues the topology routes it to.
func TestPublishRoutedIntoAWaitQueueIsNotAStall(t *testing.T) {
	t.Parallel() // waits on the broker's timer
	ctx, f, stream := waitingFlow(t, flow.Topology{
		Queues: []flow.Queue{
			{Name: "work", Role: flow.Work},
			{Name: "wait", Role: flow.Wait, TTL: 30 * time.Second, DeadLetterTo: "work"},
		},
		Exchanges: []flow.Exchange{{Name: "schedule", Kind: flow.Direct}},
		Bindings:  []flow.Binding{{Exchange: "schedule", Queue: "wait", Key: "in-30s"}},
	})
	require.NoError(t, f.PublishTo(ctx, "P", "schedule", "in-30s", "A"))
	settlesAfterTheWait(t, ctx, f, stream, 1)
}

// waitingFlow declares topo on a flow at 2× whose worker on "work" fails
// each task's first attempt into the wait queue "wait" and acks the next.
func waitingFlow(t *testing.T, topo flow.Topology) (context.Context, *rabbit.Flow, *lab.Stream) {
	s := rabbittest.Session(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	stream := lab.NewStream("test", lab.Rabbit, s.Clock, lab.SinkFunc(func(lab.Event) {}))
	f, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	require.NoError(t, f.Declare(ctx, topo))
	require.NoError(t, f.Consume(ctx, flow.Consumer{Queue: "work", Actor: "W",
		Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
			err := stream.Attempt(d.Event("W"), func() error {
				if d.Attempt == 1 && topo.DeadLetterTarget("work") == "wait" {
					return errors.New("down")
				}
				return nil
			})
			if err != nil {
				return flow.Retry("wait", err)
			}
			return flow.Ack()
		}}))
	return ctx, f, stream
}

// settlesAfterTheWait waits for the flow of waitingFlow to settle its one
// task A, which must come out of its 30 s wait (15 s real) done, after
// attempts.
func settlesAfterTheWait(t *testing.T, ctx context.Context, f *rabbit.Flow, stream *lab.Stream, attempts int) {
	start := time.Now()
	require.NoError(t, f.Wait(ctx))
	assert.GreaterOrEqual(t, time.Since(start), 14*time.Second, "A came out of its 30 s wait, not before")
	require.NoError(t, f.Close(ctx))
	tasks := stream.Finish()
	require.Len(t, tasks, 1)
	assert.Equal(t, lab.FateDone, tasks[0].Fate)
	assert.Equal(t, attempts, tasks[0].Attempts)
}

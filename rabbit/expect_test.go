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
	require.NoError(t, s.Declare(ctx, rabbit.Topology{Queues: []rabbit.Queue{
		{Name: emailQueue, Role: rabbit.Work},
		{Name: emailWait, Role: rabbit.Delay, DeadLetterTo: emailQueue}, // seed 002's retry queue: no TTL of its own
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
	require.NoError(t, s.WaitSettled(ctx, stream, nil))
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
	s.Expect(30 * time.Second)
	start := time.Now()
	err := s.WaitSettled(testCtx(t), stream, nil)
	took := time.Since(start)
	require.ErrorIs(t, err, rabbit.ErrStalled)
	assert.Regexp(t, `for 1m40s of lesson time \(10s real at 10×\) after the last wait the run scheduled ended at 3\d(\.\d+)?s; still pending: A;`, err.Error(),
		"30 s after Expect was called, in lesson time: a loaded machine calls it a little later")
	assert.GreaterOrEqual(t, took, 13*time.Second, "the 3 s timer, then the 10 s patience")
	assert.Less(t, took, 60*time.Second, "a true stall still ends within its bound (13 s, and room for a loaded machine)")
}

package lessons

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// q10TestSpeed is slow enough that the 1 s and 2 s waits (250 and 500 ms
// real) stand well clear of realSlackMs.
const q10TestSpeed = 4

func TestQ10RabbitMQ(t *testing.T) {
	events, res := runRabbit(t, q10, Options{Speed: q10TestSpeed})
	require.Len(t, res.Tables, 1, "the lesson shows the topology it declared")
	rows := res.Tables[0].Rows
	require.Len(t, rows, 6)
	assert.Regexp(t, `^qlab-[0-9a-f]{6}\.sequential\.retry\.wait$`, rows[1][0], "a private per-run prefix")
	assert.Equal(t, "250 ms (lesson 1s)", rows[1][2], "the broker waits 1 s / speed 4")
	assert.Equal(t, "500 ms (lesson 2s)", rows[3][2])
	assert.Equal(t, rows[2][0], rows[1][3], "the wait queue dead-letters into the retry processing queue")

	for _, id := range []string{"A", "B", "D"} {
		fate, attempts := summaryOf(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 1, attempts, id)
	}
	fate, attempts := summaryOf(t, events, "C")
	assert.Equal(t, lab.FateDead, fate)
	assert.Equal(t, 3, attempts)
	assert.Equal(t, []lab.Kind{
		lab.Enqueued,
		lab.Started, lab.Failed, lab.Scheduled,
		lab.Started, lab.Failed, lab.Scheduled,
		lab.Started, lab.Failed, lab.DeadLettered,
		lab.Alerted,
	}, kinds(events, "C"))

	// Who did what, where, and the attempt numbers x-death gave them.
	var starts []lab.Event
	for _, e := range events {
		if e.Task == "C" && e.Kind == lab.Started {
			starts = append(starts, e)
		}
	}
	require.Len(t, starts, 3)
	assert.Equal(t, []string{q10Sequential, q10Retry, q10SecondRetry}, []string{starts[0].Actor, starts[1].Actor, starts[2].Actor})
	assert.Equal(t, []string{rabbit.SequentialQueue, rabbit.SequentialRetryProcessing, rabbit.SequentialSecondProcessing},
		[]string{starts[0].Queue, starts[1].Queue, starts[2].Queue})
	assert.Equal(t, []int{1, 2, 3}, []int{starts[0].Attempt, starts[1].Attempt, starts[2].Attempt})
	for _, e := range events {
		if e.Kind == lab.Scheduled {
			assert.Contains(t, []int64{1000, 2000}, e.DelayMs, "delay_ms is the wait queue's TTL in lesson time")
		}
		if e.Kind == lab.Alerted {
			assert.Equal(t, "C", e.Task)
			assert.Contains(t, e.Note, "Subject: DLQ Alert: Task Failed")
		}
	}

	// The broker held C for the TTLs: 1 s, then 2 s of lesson time. The
	// lower bound is exact; the upper one allows realSlackMs of real delay.
	const tolerance = realSlackMs * q10TestSpeed
	var failures []int64
	for _, e := range events {
		if e.Task == "C" && e.Kind == lab.Failed {
			failures = append(failures, e.TMs)
		}
	}
	require.Len(t, failures, 3)
	for i, ttl := range []int64{1000, 2000} {
		wait := starts[i+1].TMs - failures[i]
		assert.GreaterOrEqual(t, wait, ttl-int64(q10TestSpeed), "wait %d", i+1) // stamps round to 1 real ms
		assert.Less(t, wait, ttl+tolerance, "wait %d", i+1)
	}
}

func TestQ10ExplainsAStaleQueue(t *testing.T) {
	// A queue left behind with other arguments (here: another TTL) makes
	// the run stop with the explanation and the reset command.
	s := rabbittest.Session(t, rabbitSpeed)
	newRunNames = func() rabbit.Names { return s.Names } // the lesson run reuses the stale names
	t.Cleanup(func() { newRunNames = rabbit.RunNames })
	wait, _ := rabbit.SequentialTopology().Queue(rabbit.SequentialRetryWait)
	wait.TTL = 7 * wait.TTL
	require.NoError(t, s.Declare(t.Context(), rabbit.Topology{Queues: []rabbit.Queue{
		{Name: rabbit.SequentialRetryProcessing, Role: rabbit.Work}, wait,
	}}))

	_, err := Run(t.Context(), q10, Options{Backend: lab.Rabbit, Broker: s.URL, Speed: rabbitSpeed})
	var pe *rabbit.PreconditionError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "rabbitmqctl delete_queue "+s.Names.Of(rabbit.SequentialRetryWait), pe.ResetCommand(), "only the conflicting queue")
	assert.Contains(t, err.Error(), "rabbitmqctl delete_queue "+s.Names.Of(rabbit.SequentialRetryProcessing))
	assert.Contains(t, err.Error(), "x-message-ttl")
}

func TestQ10InterruptedRunReportsDiscardedTasks(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx, cancel := context.WithCancel(t.Context())
	var rec syncRecorder
	stop := lab.SinkFunc(func(e lab.Event) {
		if e.Kind == lab.Scheduled && e.Task == "C" {
			cancel() // C now waits in sequential.retry.wait
		}
	})
	_, err := Run(ctx, q10, Options{Backend: lab.Rabbit, Broker: url, Speed: 1}, &rec, stop)
	require.ErrorIs(t, err, context.Canceled)
	events := rec.events()
	assertAccounted(t, events)
	fate, _ := summaryOf(t, events, "C")
	assert.Equal(t, lab.FateLost, fate, "deleting the run's queues discarded C, and an event says so")
}

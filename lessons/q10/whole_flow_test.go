package q10

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

func TestQ10RabbitMQ(t *testing.T) {
	events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{})
	require.Len(t, res.Tables, 1, "the lesson shows the topology it declared")
	rows := res.Tables[0].Rows
	require.Len(t, rows, 6)
	assert.Regexp(t, `starts with qlab-[0-9a-f]{6}\.\)$`, res.Tables[0].Title, "a private per-run prefix, named once")
	assert.Equal(t, "sequential.retry.wait", rows[1][0])
	assert.Equal(t, "250 ms (lesson 1s)", rows[1][2], "the broker waits 1 s / speed 4")
	assert.Equal(t, "500 ms (lesson 2s)", rows[3][2])
	assert.Equal(t, rows[2][0], rows[1][3], "the wait queue dead-letters into the retry processing queue")

	for _, id := range []string{"A", "B", "D"} {
		fate, attempts := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 1, attempts, id)
	}
	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDead, fate)
	assert.Equal(t, 3, attempts)
	assert.Equal(t, []lab.Kind{
		lab.Enqueued,
		lab.Started, lab.Failed, lab.Scheduled,
		lab.Started, lab.Failed, lab.Scheduled,
		lab.Started, lab.Failed, lab.DeadLettered,
		lab.Received, lab.Alerted,
	}, labtest.Kinds(events, "C"))

	// Who did what, where, and the attempt numbers x-death gave them.
	starts := labtest.Of(events, "C", lab.Started)
	require.Len(t, starts, 3)
	assert.Equal(t, []string{"Sequential-Rabbit-Worker", "Retry-Rabbit-Worker", "Second-Retry-Rabbit-Worker"},
		[]string{starts[0].Actor, starts[1].Actor, starts[2].Actor})
	assert.Equal(t, []string{q10Main, q10Retry, q10SecondRetry}, []string{starts[0].Queue, starts[1].Queue, starts[2].Queue})
	assert.Equal(t, []int{1, 2, 3}, []int{starts[0].Attempt, starts[1].Attempt, starts[2].Attempt})

	// Each retry names the wait queue the broker holds it in, with that
	// queue's TTL in lesson time; the failures come at least that far apart
	// (the broker never delivers early; how late it is, a loaded machine
	// decides, so no upper bound: see BenchmarkWaitQueueLateness).
	waits := labtest.Of(events, "C", lab.Scheduled)
	require.Len(t, waits, 2)
	assert.Equal(t, []string{q10RetryWait, q10SecondWait}, []string{waits[0].Via, waits[1].Via})
	assert.Equal(t, []int64{1000, 2000}, []int64{waits[0].DelayMs, waits[1].DelayMs})
	failures := labtest.Of(events, "C", lab.Failed)
	for i := range waits {
		assert.GreaterOrEqual(t, starts[i+1].TMs-failures[i].TMs, waits[i].DelayMs-int64(Lesson.TestSpeed), "wait %d", i+1) // stamps round to 1 real ms
	}
	alert := labtest.Of(events, "C", lab.Alerted)
	require.Len(t, alert, 1)
	assert.Contains(t, alert[0].Note, "Subject: DLQ Alert: Task Failed")
}

func TestQ10ExplainsAStaleQueue(t *testing.T) {
	// A queue left behind with other arguments (here: another TTL) makes
	// the run stop with the explanation and the reset command.
	s := rabbittest.Session(t, lessontest.RabbitSpeed)
	wait, _ := q10Topology.Queue(q10RetryWait)
	wait.TTL = 7 * wait.TTL
	require.NoError(t, s.Topo().Declare(t.Context(), flow.Topology{Queues: []flow.Queue{
		{Name: q10Retry, Role: flow.Work}, wait,
	}}))

	// The lesson run reuses the stale names.
	var err error
	lessontest.NoGoroutineOutlives(t, func() {
		_, err = lesson.Run(t.Context(), Lesson, lesson.Options{Backend: lab.Rabbit, Broker: s.URL, Speed: lessontest.RabbitSpeed, Names: rabbitenv.Of(s.Names)})
	})
	var pe *rabbit.PreconditionError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "rabbitmqctl delete_queue "+s.Names.Of(q10RetryWait), pe.ResetCommand(), "only the conflicting queue")
	assert.Contains(t, err.Error(), "rabbitmqctl delete_queue "+s.Names.Of(q10Retry))
	assert.Contains(t, err.Error(), "x-message-ttl")
}

func TestQ10InterruptedRunReportsDiscardedTasks(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx, cancel := context.WithCancel(t.Context())
	var rec labtest.Recorder
	stop := lab.SinkFunc(func(e lab.Event) {
		if e.Kind == lab.Scheduled && e.Task == "C" {
			cancel() // C now waits in sequential.retry.wait
		}
	})
	var err error
	lessontest.NoGoroutineOutlives(t, func() {
		_, err = lesson.Run(ctx, Lesson, lesson.Options{Backend: lab.Rabbit, Broker: url, Speed: 1}, &rec, stop)
	})
	require.ErrorIs(t, err, context.Canceled)
	events := rec.Events()
	labtest.AssertAccounted(t, events)
	fate, _ := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateLost, fate, "deleting the run's queues discarded C, and an event says so")
}

// TestQ10NoticeIsTrueOnEachBackend: the broker's story (rejects, the broker
// holding the delays) is told on the broker only.
func TestQ10NoticeIsTrueOnEachBackend(t *testing.T) {
	mem, broker := Lesson.NoticeFor(lab.InMem), Lesson.NoticeFor(lab.Rabbit)
	assert.NotEqual(t, mem, broker)
	assert.Contains(t, broker, "the broker holds every delay")
	assert.NotContains(t, mem, "the broker holds")
	assert.Contains(t, mem, "time.AfterFunc")
	assert.Contains(t, mem, "a crash loses it")
}

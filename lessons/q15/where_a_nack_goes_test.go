package q15

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/notify"
)

// q15Row is the routes table's row for the run whose label starts with
// prefix ("Run 1").
func q15Row(t *testing.T, tb render.Table, label string) []string {
	t.Helper()
	for _, r := range tb.Rows {
		if r[0] == label {
			return r
		}
	}
	t.Fatalf("no row %q in %q", label, tb.Title)
	return nil
}

// The three routes: where the poison job landed, read from the message.
func TestQ15ThreeRoutes(t *testing.T) {
	for _, line := range []string{"3.10", "4.3"} {
		t.Run(line, func(t *testing.T) {
			url, version := rabbittest.NeedVersion(t, line)
			assertQ15Routes(t, url, version)
		})
	}
}

// assertQ15Routes runs Q15 on the broker at url, of version, and holds
// where each run's failed email landed and the x-death it carried there:
// the same on RabbitMQ 3.10.8 and 4.3, since the retry code republishes
// the body without the headers.
func assertQ15Routes(t *testing.T, url, version string) {
	events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{Broker: url})
	labtest.AssertAccounted(t, events)
	for _, p := range []string{"d", "q", "r", "s", "p"} {
		for _, id := range []string{"A", "B", "D"} {
			fate, attempts := labtest.Summary(t, events, p+id)
			assert.Equal(t, lab.FateDone, fate, p+id)
			assert.Equal(t, 1, attempts, p+id)
		}
	}
	routes := lessontest.TableTitled(t, res.Tables, "What happened: where each version's failed email landed")
	assert.Contains(t, routes.Title, "(RabbitMQ "+version+")", "the measured table names the broker's version")
	assert.Contains(t, strings.Join(routes.Notes, " "), "RabbitMQ "+version+" (this broker)")
	for _, c := range []struct {
		task, label, landed, deaths string
		attempts                    int
	}{
		// The diagram: nack → email-dlx → email-retry-queue, and it stays there.
		{"dC", "Run 1 (dA–dD)", notify.RetryQueue, "email-queue rejected ×1", 1},
		// The queue arguments: nack → email-dlx → email-dlq, no retry.
		{"qC", "Run 2 (qA–qD)", notify.DLQ, "email-queue rejected ×1", 1},
		// The retry code: four copies through the retry queue, the nack at retries 5.
		{"rC", "Run 3 (rA–rD)", notify.DLQ, "email-queue rejected ×1, email-retry-queue expired ×1", notify.MaxRetries},
		{"sC", "Run 4 (sA–sD)", notify.DLQ, "email-queue rejected ×1, email-retry-queue expired ×1", notify.MaxRetries},
		{"pC", "Run 5 (pA–pD)", notify.DLQ, "email-queue rejected ×1, email-retry-queue expired ×1", notify.MaxRetries},
	} {
		fate, attempts := labtest.Summary(t, events, c.task)
		assert.Equal(t, c.attempts, attempts, c.task)
		// The fate says where the message is: parked in the DLQ, or
		// stranded in a retry queue nothing consumes (not "dead", and not
		// logged as a move to a dead-letter queue).
		kind, wantFate := lab.DeadLettered, lab.FateDead
		if c.landed == notify.RetryQueue {
			kind, wantFate = lab.Stranded, lab.FateStranded
			assert.Empty(t, labtest.Of(events, c.task, lab.DeadLettered), c.task)
		}
		assert.Equal(t, wantFate, fate, c.task)
		landed := labtest.Of(events, c.task, kind)
		require.Len(t, landed, 1, c.task)
		assert.Equal(t, c.landed, landed[0].To, c.task)
		line := render.Style{}.Line(landed[0])
		assert.Contains(t, line, landed[0].Note, "%s: the text log shows the note that explains the move", c.task)
		if c.landed == notify.RetryQueue {
			assert.NotContains(t, line, "Dead Letter Queue", c.task)
			assert.Contains(t, landed[0].Note, "nacked at attempt 1", c.task)
		}
		row := q15Row(t, routes, c.label)
		assert.Equal(t, c.landed, row[4], c.task)
		assert.Equal(t, c.deaths, row[5], c.task)
	}
	assert.Contains(t, q15Row(t, routes, "Run 1 (dA–dD)")[2], "x-dead-letter-exchange email-dlx, x-max-length 100000;",
		"the diagram's email-queue names no dead-letter routing key")
	assert.Contains(t, q15Row(t, routes, "Run 2 (qA–qD)")[2], "x-dead-letter-routing-key email-dlq")
	assert.Equal(t, "5, 4", q15Row(t, routes, "Run 3 (rA–rD)")[6],
		"attempt 5; the body in the DLQ says retries 4: processMessage incremented its own copy of the job, not the message it nacked")

	// The retry code's waits: getRetryDelay(1..4), scaled; 10 s is never used.
	var delays []int64
	for _, e := range labtest.Of(events, "rC", lab.Scheduled) {
		assert.Equal(t, notify.RetryQueue, e.Via)
		delays = append(delays, e.DelayMs)
	}
	assert.Equal(t, []int64{q15Delay(1).Milliseconds(), q15Delay(2).Milliseconds(), q15Delay(3).Milliseconds(), q15Delay(4).Milliseconds()}, delays)
	assert.Empty(t, labtest.Of(events, "dC", lab.Scheduled), "a nack schedules nothing")
	for _, p := range []string{"d", "q", "r"} {
		assert.Empty(t, labtest.Of(events, p+"D", lab.Redelivered), "a worker that settles once loses no channel")
		assert.Empty(t, labtest.Of(events, p+"C", lab.ChannelClosed))
	}
	assertQ15DoubleSettle(t, events, "s", []string{"D"})
	assertQ15DoubleSettle(t, events, "p", nil)
}

// assertQ15DoubleSettle checks one run of the document as written: each of
// C's five failures settles its delivery twice, and each second settle
// closes the channel with 406; a job acked before the close never comes
// back, and each of behind (jobs on the channel, unacked) comes back
// exactly once. Other redeliveries (C's own copy, or at prefetch 1 the job
// the first ack made room for) are races inside the broker: allowed, never
// required.
func assertQ15DoubleSettle(t *testing.T, events []lab.Event, prefix string, behind []string) {
	t.Helper()
	assert.Empty(t, labtest.OfKind(events, lab.Alerted), "a channel the broker closed is no alert mail")
	closes := labtest.Of(events, prefix+"C", lab.ChannelClosed)
	require.Len(t, closes, notify.MaxRetries, "%sC: one closed channel per failure", prefix)
	for _, e := range closes {
		assert.Contains(t, e.Note, "406 PRECONDITION_FAILED - unknown delivery tag", prefix)
		assert.NotContains(t, render.Style{}.Line(e), "Sending email", prefix)
	}
	for _, id := range []string{"A", "B"} {
		assert.Empty(t, labtest.Of(events, prefix+id, lab.Redelivered), "%s%s was acked before the close", prefix, id)
	}
	for _, id := range behind {
		assert.Len(t, labtest.Of(events, prefix+id, lab.Redelivered), 1, "%s%s was unacked on the closed channel", prefix, id)
		assert.Len(t, labtest.Of(events, prefix+id, lab.Succeeded), 1, "%s%s was worked once: the worker never takes a job from a dead channel", prefix, id)
	}
}

// A longer batch at prefetch 10: every job behind the poison one is
// unacked on the channel when its second settle closes it, and each comes
// back exactly once.
func TestQ15DoubleSettleRedeliversEveryUnackedJob(t *testing.T) {
	plan := lab.DefaultPlan()
	plan.Tasks = []string{"A", "B", "C", "D", "E", "F", "G", "H"}
	events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{Plan: &plan})
	labtest.AssertAccounted(t, events)
	assertQ15DoubleSettle(t, events, "s", []string{"D", "E", "F", "G", "H"})
	settle := lessontest.TableTitled(t, res.Tables, "What happened: the consume callback's second settle")
	row := q15Row(t, settle, "Run 4 (sA–sD)") // the run's label names the default plan
	assert.Equal(t, "10", row[1])
	assert.Equal(t, "0", row[5], "nothing worked twice")
}

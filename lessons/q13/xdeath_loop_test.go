package q13

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/email"
)

// q13PoisonKinds is what a poison mail goes through: q13MaxAttempts
// attempts, a wait after each but the last, then the DLQ.
func q13PoisonKinds() []lab.Kind {
	out := []lab.Kind{lab.Enqueued}
	for i := 1; i < q13MaxAttempts; i++ {
		out = append(out, lab.Started, lab.Failed, lab.Scheduled)
	}
	return append(out, lab.Started, lab.Failed, lab.DeadLettered)
}

// assertQ13Fates checks the default plan's outcome on either backend.
func assertQ13Fates(t *testing.T, events []lab.Event) {
	t.Helper()
	for _, prefix := range []string{"", "r"} {
		for _, id := range []string{"A", "B", "D"} {
			fate, attempts := labtest.Summary(t, events, prefix+id)
			assert.Equal(t, lab.FateDone, fate, prefix+id)
			assert.Equal(t, 1, attempts, prefix+id)
		}
		fate, attempts := labtest.Summary(t, events, prefix+"C")
		assert.Equal(t, lab.FateDead, fate, prefix+"C")
		assert.Equal(t, q13MaxAttempts, attempts, "%sC reaches the maximum", prefix)
		assert.Equal(t, q13PoisonKinds(), labtest.Kinds(events, prefix+"C"), prefix+"C")
		var numbers []int
		for _, e := range events {
			if e.Task == prefix+"C" && e.Kind == lab.Started {
				numbers = append(numbers, e.Attempt)
			}
			if e.Task == prefix+"C" && e.Kind == lab.Scheduled {
				assert.Equal(t, email.WaitQueue, e.Via)
				assert.Equal(t, email.Queue, e.To)
				assert.Equal(t, q13Wait.Milliseconds(), e.DelayMs)
			}
			if e.Task == prefix+"C" && e.Kind == lab.DeadLettered {
				assert.Equal(t, email.DLQ, e.To)
				assert.Equal(t, q13MaxAttempts, e.Attempt)
			}
		}
		for i, n := range numbers {
			assert.Equal(t, i+1, n, "%sC's attempt numbers count 1, 2, 3 …", prefix)
		}
	}
	assertQ13HotLoop(t, events)
}

// assertQ13HotLoop checks run 3: nack(msg) requeues, so nC is handed out
// again at once, at attempt 1 every time, never through the wait queue,
// until the lab's guard drops it: the service's loop never reaches the
// DLQ, and the stream does not say it did.
func assertQ13HotLoop(t *testing.T, events []lab.Event) {
	t.Helper()
	for _, id := range []string{"nA", "nB", "nD"} {
		fate, attempts := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 1, attempts, id)
	}
	fate, attempts := labtest.Summary(t, events, "nC")
	assert.Equal(t, lab.FateDropped, fate, "the lab's guard, not the service, ended the loop")
	assert.Empty(t, labtest.Of(events, "nC", lab.DeadLettered), "the service's loop never reaches the DLQ")
	assert.Equal(t, q13HotLoopGuard, attempts, "nC is delivered until the guard stops it")
	assert.Empty(t, labtest.Of(events, "nC", lab.Scheduled), "a requeue never visits email_queue_wait")
	moved := labtest.Of(events, "nC", lab.Moved)
	require.Len(t, moved, q13HotLoopGuard-1)
	for _, e := range moved {
		assert.Equal(t, email.Queue, e.To, "straight back to email_queue")
	}
	for _, e := range labtest.Of(events, "nC", lab.Started) {
		assert.Equal(t, 1, e.Attempt, "a requeue repeats the attempt")
	}
	dropped := labtest.Of(events, "nC", lab.Dropped)
	require.Len(t, dropped, 1)
	line := render.Style{}.Line(dropped[0])
	assert.Contains(t, line, "the lab's guard, not the service", "the text log says who stopped the loop")
	assert.NotContains(t, line, "Dead Letter Queue")
}

func TestQ13InMemory(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	assertQ13Fates(t, events)

	// Each wait is exactly the wait queue's TTL under the fake clock.
	var failedAt int64 = -1
	for _, e := range events {
		if e.Task != "C" {
			continue
		}
		switch e.Kind {
		case lab.Failed:
			failedAt = e.TMs
		case lab.Started:
			if failedAt >= 0 {
				assert.Equal(t, q13Wait.Milliseconds(), e.TMs-failedAt, "attempt %d", e.Attempt)
			}
		}
	}
	parked := lessontest.TableTitled(t, res.Tables, "What the DLQ holds")
	assert.Equal(t, [][]string{
		{"C", fmt.Sprintf("attempt %d", q13MaxAttempts), lab.ErrPoison.Error()},
		{"rC", fmt.Sprintf("attempt %d", q13MaxAttempts), lab.ErrPoison.Error()},
	}, parked.Rows, "nC never reaches the DLQ")
	traps := lessontest.TableTitled(t, res.Tables, "What happened to the NestJS email service's two traps")
	require.Len(t, traps.Rows, 2)
	assert.Equal(t, fmt.Sprintf("nC: %d deliveries in a row, the attempt read all 1; no timer: it never waited", q13HotLoopGuard), traps.Rows[0][2])
	assert.Contains(t, traps.Rows[1][2], "broker only")
	assert.Contains(t, traps.Notes[0], "d.Nack(false, true)", "the Go equivalent of amqplib's default")
	assert.Contains(t, traps.Notes[1], "20 attempts for the requeued mail", "the closing table's attempts and the attempt read are told apart")
}

func TestQ13NoticeShowsTheMaximum(t *testing.T) {
	assert.Contains(t, Lesson.Notice, fmt.Sprintf("attempt %d", q13MaxAttempts))
	assert.Contains(t, Lesson.Notice, rabbit.RetryCountHeader)
	assert.Contains(t, Lesson.Notice, "x-retries", "the RaffleAPI's way is named, with why it is risky")
	assert.Contains(t, Lesson.Notice, "requeues by default")
	assert.NotContains(t, Lesson.Notice, "seed 000")
	assert.False(t, strings.HasPrefix(rabbit.RetryCountHeader, "x-"), "the lab's own counter stays out of the broker's x- namespace")
}

// TestQ13RabbitMQ runs the lesson on the broker: the same fates as in
// memory, and the DLQ read back (left in place) with what each copy's
// headers kept.
func TestQ13RabbitMQ(t *testing.T) {
	events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{})
	labtest.AssertAccounted(t, events)
	assertQ13Fates(t, events)

	parked := lessontest.TableTitled(t, res.Tables, "What the DLQ holds")
	require.Len(t, parked.Rows, 2, "C and rC, and nothing else, in the DLQ: the guard dropped nC")
	max := q13MaxAttempts - 1
	assert.Equal(t, []string{"C", fmt.Sprintf("%d / %d, 0", max, max), "(not kept: x-death records no error)"}, parked.Rows[0],
		"x-death counted C's rejects up to the maximum; the copy kept them")
	assert.Equal(t, "rC", parked.Rows[1][0])
	assert.Regexp(t, fmt.Sprintf(`^0 / \d+, %d$`, max), parked.Rows[1][1], "rC never rejected and carries the lab's own count")
	assert.Equal(t, lab.ErrPoison.Error(), parked.Rows[1][2], "and its last error")

	counters := lessontest.TableTitled(t, res.Tables, "What the counters read")
	series := func(i int) string { return counters.Rows[i][2] }
	upTo := func(from, to int) string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprint(i))
		}
		return strings.Join(out, " ")
	}
	assert.Equal(t, upTo(0, max), series(0), "C: x-death rejects")
	assert.Equal(t, "1 "+upTo(1, max), series(2), "C: the seed's x-death[0].count ?? 1 reads 1 twice")
	assert.Equal(t, upTo(0, max), series(3), "rC: x-retries")
	assert.Equal(t, strings.TrimSpace(strings.Repeat("0 ", q13MaxAttempts)), series(4), "rC: no rejects")
	assert.Regexp(t, `\(RabbitMQ \d+\.\d+\.\d+\)$`, counters.Title, "labelled with the version it was measured on (3.10 or 4.3)")

	traps := lessontest.TableTitled(t, res.Tables, "What happened to the NestJS email service's two traps")
	require.Len(t, traps.Rows, 3)
	assert.Equal(t, fmt.Sprintf("nC: %d deliveries in a row, the attempt read all 1; x-death[0].count ?? 1 read all 1; trips through %s: all 0",
		q13HotLoopGuard, email.WaitQueue), traps.Rows[0][2])
	assert.Equal(t, "confirm: ack; basic.return: none; email_queue_dlq afterwards: does not exist → the mail is gone, and the worker acks the original",
		traps.Rows[1][2], "without mandatory an unroutable publish is confirmed and lost")
	assert.Equal(t, "confirm: ack; basic.return: 312 NO_ROUTE; email_queue_dlq afterwards: does not exist → the publisher learns that nothing took it",
		traps.Rows[2][2], "mandatory brings it back")
}

// TestQ13StoppedEarlyReportsLost: a run cut short deletes its queues with
// the mails still in them, and says so with a lost event per mail.
func TestQ13StoppedEarlyReportsLost(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx, cancel := context.WithCancel(context.Background())
	var rec labtest.Recorder
	stop := lab.SinkFunc(func(e lab.Event) {
		if e.Kind == lab.Scheduled && e.Task == "C" && e.Attempt == 3 {
			cancel() // mid-loop: C sits in email_queue_wait
		}
	})
	_, err := lesson.Run(ctx, Lesson, lesson.Options{Backend: lab.Rabbit, Broker: url, Speed: 20}, &rec, stop)
	require.ErrorIs(t, err, context.Canceled)
	events := rec.Events()
	labtest.AssertAccounted(t, events)
	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateLost, fate)
	assert.Equal(t, 3, attempts)
	assert.Equal(t, lab.Lost, labtest.Kinds(events, "C")[len(labtest.Kinds(events, "C"))-1])
}

// TestQ13XDeathByVersion holds what each version does with the x-death
// run 2's worker copies back into its republished retry: RabbitMQ 3.10.8
// reads it and counts on (0 1 2 … 14 expiries), 4.3 ignores it and every
// round reads a fresh 1. The header of the lab's own counts on both.
func TestQ13XDeathByVersion(t *testing.T) {
	max := q13MaxAttempts - 1
	ones := "0" + strings.Repeat(" 1", max)
	for line, copied := range map[string]string{"3.10": upToString(0, max), "4.3": ones} {
		t.Run(line, func(t *testing.T) {
			url, version := rabbittest.NeedVersion(t, line)
			events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{Broker: url})
			labtest.AssertAccounted(t, events)
			assertQ13Fates(t, events)
			counters := lessontest.TableTitled(t, res.Tables, "What the counters read")
			assert.Contains(t, counters.Title, "RabbitMQ "+version)
			assert.Equal(t, copied, counters.Rows[5][2], "rC: the x-death copied back")
			assert.Equal(t, upToString(0, max), counters.Rows[3][2], "rC: the lab's own header")
			assert.Contains(t, strings.Join(counters.Notes, " "), "RabbitMQ "+version+" (this broker)")
		})
	}
}

// upToString is "from from+1 … to".
func upToString(from, to int) string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return strings.Join(out, " ")
}

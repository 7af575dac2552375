package lessons

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
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
			fate, attempts := summaryOf(t, events, prefix+id)
			assert.Equal(t, lab.FateDone, fate, prefix+id)
			assert.Equal(t, 1, attempts, prefix+id)
		}
		fate, attempts := summaryOf(t, events, prefix+"C")
		assert.Equal(t, lab.FateDead, fate, prefix+"C")
		assert.Equal(t, q13MaxAttempts, attempts, "%sC reaches the maximum", prefix)
		assert.Equal(t, q13PoisonKinds(), kinds(events, prefix+"C"), prefix+"C")
		var numbers []int
		for _, e := range events {
			if e.Task == prefix+"C" && e.Kind == lab.Started {
				numbers = append(numbers, e.Attempt)
			}
			if e.Task == prefix+"C" && e.Kind == lab.Scheduled {
				assert.Equal(t, rabbit.EmailWait, e.Queue)
				assert.Equal(t, rabbit.EmailQueue, e.To)
				assert.Equal(t, q13Wait.Milliseconds(), e.DelayMs)
			}
			if e.Task == prefix+"C" && e.Kind == lab.DeadLettered {
				assert.Equal(t, rabbit.EmailDLQ, e.To)
				assert.Equal(t, q13MaxAttempts, e.Attempt)
			}
		}
		for i, n := range numbers {
			assert.Equal(t, i+1, n, "%sC's attempt numbers count 1, 2, 3 …", prefix)
		}
	}
}

func TestQ13InMemory(t *testing.T) {
	events, res := runInMem(t, q13, Options{})
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
	require.Len(t, res.Tables, 1)
	assert.Equal(t, [][]string{
		{"C", fmt.Sprintf("attempt %d", q13MaxAttempts), lab.ErrPoison.Error()},
		{"rC", fmt.Sprintf("attempt %d", q13MaxAttempts), lab.ErrPoison.Error()},
	}, res.Tables[0].Rows)
}

func TestQ13NoticeShowsTheMaximum(t *testing.T) {
	assert.Contains(t, q13.Notice, fmt.Sprintf("attempt %d", q13MaxAttempts))
	assert.Contains(t, q13.Notice, "x-retries")
}

// TestQ13RabbitMQ runs the lesson on the broker under a session of the
// test's own, so the DLQ can be read back with basic.get after the run.
func TestQ13RabbitMQ(t *testing.T) {
	s := rabbittest.Session(t, rabbitSpeeds["Q13"]) // the 5 s wait takes 25 ms
	var rec syncRecorder
	env := &Env{Stream: lab.NewStream("q13", lab.Rabbit, s.Clock, &rec), Plan: lab.DefaultPlan(), Broker: s.URL}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, q13RabbitOn(ctx, env, s))
	env.Stream.Finish()
	events := rec.events()
	assertAccounted(t, events)
	assertQ13Fates(t, events)

	parked, err := s.Peek(ctx, rabbit.EmailDLQ, 10)
	require.NoError(t, err)
	require.Len(t, parked, 2, "C and rC, and nothing else, in the DLQ")
	byDeath, byHeader := parked[0], parked[1]
	assert.Equal(t, "C", byDeath.Task)
	assert.Equal(t, "rC", byHeader.Task)
	for _, d := range parked {
		assert.Equal(t, uint8(2), d.DeliveryMode, "still persistent")
		var body rabbit.TaskBody
		require.NoError(t, json.Unmarshal(d.Body, &body))
		assert.Equal(t, d.Task, body.Task, "the body travelled unchanged")
	}
	wait := s.Names.Of(rabbit.EmailWait)
	// x-death counted C's rejects up to the maximum; the copy kept them.
	assert.Equal(t, int64(q13MaxAttempts-1), byDeath.Deaths.Count(s.Names.Of(rabbit.EmailQueue)))
	assert.Equal(t, int64(q13MaxAttempts-1), byDeath.Deaths.Count(wait))
	assert.Equal(t, q13MaxAttempts, byDeath.Attempt())
	assert.Zero(t, rabbit.Retries(byDeath.Headers))
	// rC carries the lab's own count and the last error.
	assert.Equal(t, q13MaxAttempts-1, rabbit.Retries(byHeader.Headers))
	assert.Equal(t, lab.ErrPoison.Error(), rabbit.RetryReason(byHeader.Headers))
	assert.Zero(t, byHeader.Deaths.Reason("rejected"), "the header loop never rejects")

	for _, q := range []string{rabbit.EmailQueue, rabbit.EmailWait} {
		n, err := s.Depth(ctx, q)
		require.NoError(t, err)
		assert.Zero(t, n, "%s is empty after the run", q)
	}
	n, err := s.Depth(ctx, rabbit.EmailDLQ)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "peeking left the DLQ as it was")

	counters := q13Table(t, env, "What the counters read")
	series := func(i int) string { return counters.Rows[i][2] }
	upTo := func(from, to int) string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprint(i))
		}
		return strings.Join(out, " ")
	}
	assert.Equal(t, upTo(0, q13MaxAttempts-1), series(0), "C: x-death rejects")
	assert.Equal(t, "1 "+upTo(1, q13MaxAttempts-1), series(2), "C: the seed's x-death[0].count ?? 1 reads 1 twice")
	assert.Equal(t, upTo(0, q13MaxAttempts-1), series(3), "rC: x-retries")
	assert.Equal(t, strings.TrimSpace(strings.Repeat("0 ", q13MaxAttempts)), series(4), "rC: no rejects")
	assert.Contains(t, counters.Title, "RabbitMQ 3.")
}

// q13Table finds the table of env whose title starts with prefix.
func q13Table(t *testing.T, env *Env, prefix string) render.Table {
	t.Helper()
	for _, tb := range env.tables {
		if strings.HasPrefix(tb.Title, prefix) {
			return tb
		}
	}
	t.Fatalf("no table %q", prefix)
	return render.Table{}
}

// TestQ13SameOnBothBackends: the in-memory variant with its attempt field
// and the broker's loop give every task the same fate and attempts.
func TestQ13SameOnBothBackends(t *testing.T) {
	for name, plan := range map[string]*lab.Plan{"default": nil, "seeded": seededPlan(3)} {
		t.Run(name, func(t *testing.T) {
			inmem, _ := runInMem(t, q13, Options{Plan: plan})
			broker, _ := runRabbit(t, q13, Options{Plan: plan})
			assert.Equal(t, q13Fates(inmem), q13Fates(broker))
		})
	}
}

// q13Fates maps each task to "fate/attempts" from its summary.
func q13Fates(events []lab.Event) map[string]string {
	out := map[string]string{}
	for _, e := range events {
		if e.Kind == lab.Summary {
			out[e.Task] = fmt.Sprintf("%s/%d", e.Fate, e.Attempt)
		}
	}
	return out
}

// TestQ13StoppedEarlyReportsLost: a run cut short deletes its queues with
// the mails still in them, and says so with a lost event per mail.
func TestQ13StoppedEarlyReportsLost(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx, cancel := context.WithCancel(context.Background())
	var rec syncRecorder
	stop := lab.SinkFunc(func(e lab.Event) {
		if e.Kind == lab.Scheduled && e.Task == "C" && e.Attempt == 3 {
			cancel() // mid-loop: C sits in email_queue_wait
		}
	})
	_, err := Run(ctx, q13, Options{Backend: lab.Rabbit, Broker: url, Speed: 20}, &rec, stop)
	require.ErrorIs(t, err, context.Canceled)
	events := rec.events()
	assertAccounted(t, events)
	fate, attempts := summaryOf(t, events, "C")
	assert.Equal(t, lab.FateLost, fate)
	assert.Equal(t, 3, attempts)
	assert.Equal(t, lab.Lost, kinds(events, "C")[len(kinds(events, "C"))-1])
}

package rabbit_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// forgedRetries is the x-retries value property fuzzing found read as an
// attempt number (issue 14).
const forgedRetries = int64(-4165776671792680912)

func TestReadRetriesValidates(t *testing.T) {
	h := rabbit.RetryCountHeader
	for _, tc := range []struct {
		name  string
		value any
		want  int
		bad   bool
	}{
		{"missing", nil, 0, false},
		{"int64 as the lab writes it", int64(3), 3, false},
		{"int32 from another client", int32(14), 14, false},
		{"uint8", uint8(1), 1, false},
		{"the bound", int64(rabbit.MaxRetryCount), rabbit.MaxRetryCount, false},
		{"the forged value", forgedRetries, 0, true},
		{"negative", int32(-4), 0, true},
		{"above the bound", int64(1001), 0, true},
		{"MaxInt64", int64(math.MaxInt64), 0, true},
		{"huge unsigned", uint64(math.MaxUint64), 0, true},
		{"a string", "3", 0, true},
		{"a float", 3.0, 0, true},
		{"a table", amqp.Table{"n": 1}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := amqp.Table{}
			if tc.value != nil {
				headers[h] = tc.value
			}
			n, err := rabbit.ReadRetries(headers, h)
			if tc.bad {
				require.ErrorIs(t, err, rabbit.ErrBadCount)
				assert.Contains(t, err.Error(), h, "the error names the header")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, n)
		})
	}
}

func TestParseDeathsValidates(t *testing.T) {
	death := func(reason string, count any) amqp.Table {
		return amqp.Table{"queue": "q", "reason": reason, "count": count}
	}
	good := amqp.Table{"x-death": []any{death("rejected", int64(2)), death("expired", int64(2))}}
	ds, err := rabbit.ParseDeaths(good)
	require.NoError(t, err)
	n, err := ds.Attempt()
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	for name, h := range map[string]amqp.Table{
		"not an array":   {"x-death": "rejected twice"},
		"not a table":    {"x-death": []any{"rejected"}},
		"negative count": {"x-death": []any{death("rejected", int64(-99))}},
		"no count":       {"x-death": []any{amqp.Table{"queue": "q", "reason": "rejected"}}},
		"text count":     {"x-death": []any{death("rejected", "2")}},
	} {
		_, err := rabbit.ParseDeaths(h)
		assert.ErrorIs(t, err, rabbit.ErrBadDeaths, name)
	}

	huge := amqp.Table{"x-death": []any{death("rejected", int64(math.MaxInt64)), death("rejected", int64(math.MaxInt64))}}
	ds, err = rabbit.ParseDeaths(huge)
	require.NoError(t, err, "well formed, just implausible")
	assert.Equal(t, int64(math.MaxInt64), ds.Reason("rejected"), "the sum saturates instead of wrapping negative")
	n, err = ds.Attempt()
	require.ErrorIs(t, err, rabbit.ErrBadCount)
	assert.Equal(t, rabbit.MaxRetryCount+1, n, "still in range for a caller that ignores the error")

	lenient := rabbit.ReadDeaths(amqp.Table{"x-death": []any{death("rejected", int64(-4)), death("rejected", int64(1))}})
	assert.Equal(t, int64(1), lenient.Reason("rejected"), "ReadDeaths skips the negative entry")
	assert.Equal(t, 2, (&rabbit.Delivery{Deaths: lenient}).Attempt())
}

// TestUntrustedAttemptCountIsHeld: a copy of the run's pending task A,
// with the run's app-id but a forged attempt count (the fuzzer's
// x-retries, a negative x-death), arrives before A itself. It reaches no
// handler and goes to the run's hold queue with the reason; it does not
// touch A, whose own message is handled and done.
func TestUntrustedAttemptCountIsHeld(t *testing.T) {
	for _, tc := range []struct {
		name    string
		header  string // the consumer's retry header, "" for x-death
		headers amqp.Table
		want    string
	}{
		{"forged qlab-retries", rabbit.RetryCountHeader, amqp.Table{rabbit.RetryCountHeader: forgedRetries}, "-4165776671792680912 is negative"},
		{"x-retries above the bound", rabbit.RetriesHeader, amqp.Table{rabbit.RetriesHeader: int64(1001)}, "1001 is above 100"},
		{"negative x-death", "", amqp.Table{"x-death": []any{amqp.Table{"queue": "q", "reason": "rejected", "count": int64(-99)}}}, "malformed x-death"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rabbittest.Session(t, 20)
			ctx := testCtx(t)
			stream, events := recorded()
			b, err := rabbit.NewFlow(ctx, s, stream)
			require.NoError(t, err)
			require.NoError(t, b.Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
			other := outsider(t)
			hold := s.Names.Run + ".foreign"
			t.Cleanup(func() { _, _ = outsider(t).QueueDelete(hold, false, false, false) })
			// Stamped as the run's own (seal and all): only its count is wrong.
			copyOfA := amqp.Publishing{MessageId: "A", ContentType: "application/json", Headers: tc.headers, Body: []byte(`{"task":"A"}`)}
			rabbit.Stamp(&copyOfA, s.Names)
			publishConfirmed(ctx, t, other, s.Names.Of("work"), copyOfA)
			require.NoError(t, b.Publish(ctx, "Producer", "work", "A"))
			var mu sync.Mutex
			var handled []string
			require.NoError(t, b.Consume(ctx, flow.Consumer{Queue: "work", Actor: "W", RetryHeader: tc.header,
				Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
					mu.Lock()
					defer mu.Unlock()
					handled = append(handled, d.Task)
					_ = stream.Attempt(d.Event("W"), func() error { return nil })
					return flow.Ack()
				}}))
			require.NoError(t, b.Wait(ctx))

			mu.Lock()
			assert.Equal(t, []string{"A"}, handled, "the forged message reaches no handler")
			mu.Unlock()
			assert.Empty(t, labtest.Of(events(), "A", lab.DeadLettered), "the forged copy does not touch A")
			for _, r := range stream.Tasks() {
				assert.Equal(t, lab.FateDone, r.Fate, "task %s", r.ID)
			}
			assert.Equal(t, 1, s.Guest().Foreign())
			held, ok, err := other.Get(hold, true)
			require.NoError(t, err)
			require.True(t, ok, "the message waits in %s", hold)
			assert.Equal(t, "A", held.MessageId)
			assert.Contains(t, held.Headers[rabbit.ForeignReasonHeader], tc.want)
			require.NoError(t, b.Close(ctx))
		})
	}
}

// TestUnroutablePublishIsConfirmedAndGone pins the NestJS email service's
// second trap on the broker: a publish to a queue nobody declared is
// confirmed (ack) all the same and the message is nowhere; only mandatory
// brings it back, as a basic.return 312 NO_ROUTE before the ack.
func TestUnroutablePublishIsConfirmedAndGone(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	lost, err := s.Probes().PublishUnroutable(ctx, "email_queue_dlq", "C", false)
	require.NoError(t, err)
	assert.Equal(t, rabbit.Unroutable{Confirmed: true}, lost, "acked, not returned, no queue: gone")

	back, err := s.Probes().PublishUnroutable(ctx, "email_queue_dlq", "C", true)
	require.NoError(t, err)
	assert.True(t, back.Confirmed)
	assert.True(t, back.Returned)
	assert.Equal(t, uint16(amqp.NoRoute), back.ReplyCode)
	assert.Equal(t, "NO_ROUTE", back.ReplyText)
	assert.False(t, back.QueueExists)

	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "email_queue_dlq", Role: flow.DLQ}}}))
	_, err = s.Probes().PublishUnroutable(ctx, "email_queue_dlq", "C", false)
	assert.ErrorContains(t, err, "must not exist", "it never publishes into an existing queue")
}

// TestDeathsDescribe: one line, most recent first, under the names the
// caller gives the queues; "none" for a message that never died.
func TestDeathsDescribe(t *testing.T) {
	seed := func(q string) string { return strings.TrimPrefix(q, "run.") }
	ds := rabbit.Deaths{
		{Queue: "run.email-queue", Reason: "rejected", Count: 2},
		{Queue: "run.email-retry-queue", Reason: "expired", Count: 1},
	}
	assert.Equal(t, "email-queue rejected ×2, email-retry-queue expired ×1", ds.Describe(seed))
	assert.Equal(t, "none", rabbit.Deaths(nil).Describe(seed))
}

// TestForgedCopyOfAFinishedTaskIsHeld: once task A is done, a copy of A
// with the run's app-id (well formed, or with a forged retry count), and a
// message under an id the run never published (ZZ), reach no handler:
// each is moved to the hold queue with a reason, and A stays done. On
// the old code the handler processed the copy as A's next attempt and ZZ
// as a task with no summary, and the forged count turned A dead.
func TestForgedCopyOfAFinishedTaskIsHeld(t *testing.T) {
	s := rabbittest.Session(t, 20)
	ctx := testCtx(t)
	stream, events := recorded()
	b, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	require.NoError(t, b.Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
	handled := make(chan string, 8)
	require.NoError(t, b.Consume(ctx, flow.Consumer{Queue: "work", Actor: "W", RetryHeader: rabbit.RetryCountHeader,
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			handled <- d.Task
			_ = stream.Attempt(d.Event("W"), func() error { return nil })
			return flow.Ack()
		}}))
	require.NoError(t, b.Publish(ctx, "Producer", "work", "A"))
	require.NoError(t, b.Wait(ctx))
	require.Equal(t, "A", <-handled)

	other := outsider(t)
	hold := s.Names.Run + ".foreign"
	t.Cleanup(func() { _, _ = outsider(t).QueueDelete(hold, false, false, false) })
	for _, m := range []amqp.Publishing{
		{MessageId: "A", Body: []byte(`{"task":"A"}`)},
		{MessageId: "A", Body: []byte(`{"task":"A"}`), Headers: amqp.Table{rabbit.RetryCountHeader: int64(-4)}},
		{MessageId: "ZZ", Body: []byte(`{"task":"ZZ"}`)},
	} {
		m.AppId, m.ContentType = s.Names.Run, "application/json"
		publishConfirmed(ctx, t, other, s.Names.Of("work"), m)
	}
	require.Eventually(t, func() bool { return s.Guest().Foreign() == 3 }, 10*time.Second, 10*time.Millisecond, "all three held")
	select {
	case task := <-handled:
		t.Fatalf("the handler got %s again", task)
	default:
	}
	for _, r := range stream.Tasks() {
		assert.Equal(t, "A", r.ID, "no task for ZZ")
		assert.Equal(t, lab.FateDone, r.Fate, "A stays done")
	}
	assert.Empty(t, labtest.Of(events(), "A", lab.DeadLettered))
	assert.Equal(t, 3, depthOf(t, other, hold))
	require.NoError(t, b.Close(ctx))
}

// TestRedeliveredCopyOfASettledTaskKeepsItsFate: a message of a task the
// run has settled that the broker hands out again (its ack was lost with
// a connection; here an outsider's get and nack with requeue sets the
// flag) is acked, and the task stays done. Before, the consumer reported
// the redelivery, which reopens a task, before the flow knew the task was
// settled: the task stayed pending until the run stalled (the fault
// suite's close/q23, with two busy cores).
func TestRedeliveredCopyOfASettledTaskKeepsItsFate(t *testing.T) {
	s := rabbittest.Session(t, 20)
	ctx := testCtx(t)
	stream, events := recorded()
	b, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	require.NoError(t, b.Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
	holding, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, b.Consume(ctx, flow.Consumer{Queue: "work", Actor: "W",
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			if d.Task == "C" {
				close(holding)
				<-release // C holds the consumer's one unacked delivery
			}
			_ = stream.Attempt(d.Event("W"), func() error { return nil })
			return flow.Ack()
		}}))
	require.NoError(t, b.Publish(ctx, "Producer", "work", "A"))
	require.Eventually(t, func() bool {
		ts := stream.Tasks()
		return len(ts) == 1 && ts[0].Fate == lab.FateDone
	}, 10*time.Second, 10*time.Millisecond, "A done")
	require.NoError(t, b.Publish(ctx, "Producer", "work", "C"))
	<-holding

	other := outsider(t)
	work := s.Names.Of("work")
	sealed := amqp.Publishing{MessageId: "A", ContentType: "application/json", Body: []byte(`{"task":"A"}`)}
	rabbit.Stamp(&sealed, s.Names) // a true copy of the run's A, seal and all
	publishConfirmed(ctx, t, other, work, sealed)
	copyOfA, ok, err := other.Get(work, false) // autoAck
	require.NoError(t, err)
	require.True(t, ok, "the copy of A waits in work")
	require.NoError(t, copyOfA.Nack(false, true))               // multiple, requeue: handed out again, redelivered
	require.NoError(t, b.Publish(ctx, "Producer", "work", "B")) // behind the copy
	close(release)

	require.NoError(t, b.Wait(ctx), "every task settles: none was reopened")
	for _, r := range stream.Tasks() {
		assert.Equal(t, lab.FateDone, r.Fate, "task %s", r.ID)
	}
	assert.Empty(t, labtest.Of(events(), "A", lab.Redelivered), "the copy is no delivery of the run's")
	assert.Zero(t, s.Guest().Foreign(), "a redelivered copy is acked, not held")
	require.NoError(t, b.Close(ctx))
}

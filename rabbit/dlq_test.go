package rabbit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

func dlqCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ids(ds []amqp.Delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.MessageId)
	}
	return out
}

// Inspect reads without removing: depth and order are the same after it,
// and the broker marks what it handed out redelivered.
func TestInspectLeavesEveryMessageInPlace(t *testing.T) {
	ctx := dlqCtx(t)
	conn, q := rabbittest.ForeignQueue(t, nil, `{"retries":5}`, `{"retries":5}`, `{"retries":5}`, `{"retries":5}`)
	got, err := rabbit.Inspect(ctx, conn, q, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1", "m2"}, ids(got))
	assert.False(t, got[0].Redelivered)
	depth, err := rabbit.QueueDepth(ctx, conn, q)
	require.NoError(t, err)
	assert.Equal(t, 4, depth, "nothing removed")

	all, err := rabbit.Inspect(ctx, conn, q, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1", "m2", "m3", "m4"}, ids(all), "same order")
	assert.Equal(t, []bool{true, true, false, false}, []bool{all[0].Redelivered, all[1].Redelivered, all[2].Redelivered, all[3].Redelivered},
		"the cost of reading: the broker marks a message it handed back redelivered")
	depth, _ = rabbit.QueueDepth(ctx, conn, q)
	assert.Equal(t, 4, depth)
}

// InspectRequeue (the management API's reject_requeue_true) keeps them too;
// Take (its ack_requeue_false) removes what it reads.
func TestRequeueKeepsTakeRemoves(t *testing.T) {
	ctx := dlqCtx(t)
	conn, q := rabbittest.ForeignQueue(t, nil, "a", "b", "c")
	got, err := rabbit.InspectRequeue(ctx, conn, q, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1", "m2", "m3"}, ids(got))
	after, err := rabbit.Inspect(ctx, conn, q, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1", "m2", "m3"}, ids(after), "requeued in place")

	taken, err := rabbit.Take(ctx, conn, q, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1", "m2"}, ids(taken))
	left, err := rabbit.Inspect(ctx, conn, q, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"m3"}, ids(left), "what Take read is gone")
}

func TestReplayMovesWithAndWithoutReset(t *testing.T) {
	ctx := dlqCtx(t)
	job := `{"type":"notification","data":{"notificationId":"n1"},"retries":5}`
	conn, dlq := rabbittest.ForeignQueue(t, nil, job, job, job)
	_, work := rabbittest.ForeignQueue(t, nil)
	ch, err := conn.Channel()
	require.NoError(t, err)
	defer ch.Close()

	res, err := rabbit.Replay(ctx, conn, dlq, work, rabbit.ReplayOptions{N: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, ids(res.Moved))
	assert.Zero(t, res.Reset)
	d, ok, err := ch.Get(work, true)
	require.NoError(t, err)
	require.True(t, ok)
	assert.JSONEq(t, job, string(d.Body), "without --reset-retries the body still says retries 5")
	assert.Equal(t, "m1", d.MessageId)
	assert.EqualValues(t, 1, d.Headers["n"], "headers travel")

	res, err = rabbit.Replay(ctx, conn, dlq, work, rabbit.ReplayOptions{ResetRetries: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"m2", "m3"}, ids(res.Moved))
	assert.Equal(t, 2, res.Reset)
	for _, want := range []string{"m2", "m3"} {
		d, ok, err := ch.Get(work, true)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, want, d.MessageId, "order kept")
		var body struct {
			Retries int `json:"retries"`
			Data    struct {
				ID string `json:"notificationId"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &body))
		assert.Equal(t, 0, body.Retries)
		assert.Equal(t, "n1", body.Data.ID, "the rest of the job is kept")
	}
	depth, _ := rabbit.QueueDepth(ctx, conn, dlq)
	assert.Zero(t, depth, "acked once the copies were confirmed")
}

// A copy the broker refuses (a target full with reject-publish) stops the
// replay, and the original stays in the source: never lost.
func TestReplayNackKeepsTheOriginal(t *testing.T) {
	ctx := dlqCtx(t)
	conn, dlq := rabbittest.ForeignQueue(t, nil, "a", "b", "c")
	_, full := rabbittest.ForeignQueue(t, amqp.Table{"x-max-length": int64(1), "x-overflow": "reject-publish"})
	res, err := rabbit.Replay(ctx, conn, dlq, full, rabbit.ReplayOptions{})
	require.ErrorIs(t, err, rabbit.ErrNacked)
	assert.Equal(t, []string{"m1"}, ids(res.Moved))
	left, err := rabbit.Inspect(ctx, conn, dlq, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"m2", "m3"}, ids(left), "the refused message is back at the head")
}

func TestDLQOperationsRefuseAMissingQueue(t *testing.T) {
	ctx := dlqCtx(t)
	conn, q := rabbittest.ForeignQueue(t, nil, "a")
	var nq *rabbit.NoQueueError
	_, err := rabbit.Inspect(ctx, conn, q+"-nope", 1)
	require.ErrorAs(t, err, &nq)
	assert.Equal(t, q+"-nope", nq.Queue)
	_, err = rabbit.Replay(ctx, conn, q, q+"-nope", rabbit.ReplayOptions{})
	require.ErrorAs(t, err, &nq)
	_, err = rabbit.Purge(ctx, conn, q+"-nope")
	require.ErrorAs(t, err, &nq)
	_, err = rabbit.Replay(ctx, conn, q, q, rabbit.ReplayOptions{})
	require.ErrorIs(t, err, rabbit.ErrSameQueue)
	depth, err := rabbit.QueueDepth(ctx, conn, q)
	require.NoError(t, err, "the connection survives the 404s: each passive declare had its own channel")
	assert.Equal(t, 1, depth)
}

func TestPurgeEmptiesTheQueue(t *testing.T) {
	ctx := dlqCtx(t)
	conn, q := rabbittest.ForeignQueue(t, nil, "a", "b")
	n, err := rabbit.Purge(ctx, conn, q)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	depth, _ := rabbit.QueueDepth(ctx, conn, q)
	assert.Zero(t, depth)
}

func TestResetRetries(t *testing.T) {
	h := amqp.Table{"x-death": []any{}, "x-first-death-reason": "rejected", rabbit.RetryCountHeader: int32(3), "keep": "me"}
	out, body, changed := rabbit.ResetRetries(h, []byte(`{"retries":5,"type":"x"}`))
	assert.True(t, changed)
	assert.Equal(t, amqp.Table{"keep": "me"}, out)
	assert.JSONEq(t, `{"retries":0,"type":"x"}`, string(body))
	assert.Len(t, h, 4, "the caller's headers are not touched")
	_, body, changed = rabbit.ResetRetries(nil, []byte("not json"))
	assert.False(t, changed)
	assert.Equal(t, "not json", string(body))
}

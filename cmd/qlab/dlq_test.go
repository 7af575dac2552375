package main

import (
	"context"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// dlqOrder is what a queue holds, head first, read without removing.
func dlqOrder(t *testing.T, conn *amqp.Connection, q string) []string {
	t.Helper()
	msgs, err := rabbit.Inspect(context.Background(), conn, q, 0)
	require.NoError(t, err)
	var ids []string
	for _, d := range msgs {
		ids = append(ids, d.MessageId)
	}
	return ids
}

// TestDLQInspectLeavesEveryMessage: on a queue made outside the lab,
// inspect prints what it read and the queue's depth and order are the
// same afterwards.
func TestDLQInspectLeavesEveryMessage(t *testing.T) {
	conn, q := rabbittest.ForeignQueue(t, nil, `{"retries":5}`, `{"retries":4}`, `{"retries":3}`)
	code, out, errOut := qlab("dlq", "inspect", q, "--n", "2")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `#1 message-id="m1"`)
	assert.Contains(t, out, `#2 message-id="m2"`)
	assert.NotContains(t, out, `"m3"`, "--n 2 shows two")
	assert.Contains(t, out, `body: {"retries":5}`)
	assert.Contains(t, out, "header n=1")
	assert.Contains(t, out, "showed 2 of 3 ready messages; all left in place")
	assert.Equal(t, []string{"m1", "m2", "m3"}, dlqOrder(t, conn, q), "depth and order unchanged")
}

func TestDLQReplayMovesAndResets(t *testing.T) {
	conn, dlq := rabbittest.ForeignQueue(t, nil, `{"retries":5}`, `{"retries":5}`)
	_, work := rabbittest.ForeignQueue(t, nil)
	code, out, errOut := qlab("dlq", "replay", dlq, "--to", work, "--n", "1")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "replayed 1 message from "+dlq+" to "+work)
	code, out, errOut = qlab("dlq", "replay", dlq, "--to", work, "--reset-retries")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "retries reset on 1 message")
	assert.Empty(t, dlqOrder(t, conn, dlq))
	assert.Equal(t, []string{"m1", "m2"}, dlqOrder(t, conn, work))
	msgs, err := rabbit.Inspect(context.Background(), conn, work, 0)
	require.NoError(t, err)
	assert.Equal(t, `{"retries":5}`, string(msgs[0].Body), "without --reset-retries: as it was")
	assert.Equal(t, `{"retries":0}`, string(msgs[1].Body), "with it: a fresh budget")
}

func TestDLQPurge(t *testing.T) {
	conn, q := rabbittest.ForeignQueue(t, nil, "a", "b")
	code, out, errOut := qlab("dlq", "purge", q)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Equal(t, "qlab: dlq purge deletes every message in the queue and cannot be undone; add --yes if you mean it\n", errOut)
	assert.Len(t, dlqOrder(t, conn, q), 2, "refused: nothing deleted")
	code, out, errOut = qlab("dlq", "purge", q, "--yes")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "purged "+q+": 2 messages deleted\n", out)
	assert.Empty(t, dlqOrder(t, conn, q))
}

// A queue that does not exist is one line and exit 1, for every action;
// --prefix is applied to both queue names.
func TestDLQRefusesAMissingQueue(t *testing.T) {
	_, q := rabbittest.ForeignQueue(t, nil, "a")
	for _, args := range [][]string{
		{"dlq", "inspect", q + "-nope"},
		{"dlq", "replay", q, "--to", q + "-nope"},
		{"dlq", "purge", q + "-nope", "--yes"},
		{"dlq", "inspect", q, "--prefix", "someone"},
	} {
		code, out, errOut := qlab(args...)
		assert.Equal(t, exitError, code, args)
		assert.Empty(t, out, args)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		assert.Contains(t, errOut, "does not exist on this broker", args)
	}
	_, _, errOut := qlab("dlq", "inspect", q, "--prefix", "someone")
	assert.Contains(t, errOut, "queue someone."+q+" does not exist")
}

func TestDLQUsageErrors(t *testing.T) {
	cases := map[string][]string{
		"no queue":          {"dlq", "inspect"},
		"unknown action":    {"dlq", "drain", "q"},
		"replay without to": {"dlq", "replay", "q"},
		"to on inspect":     {"dlq", "inspect", "q", "--to", "w"},
		"negative n":        {"dlq", "inspect", "q", "--n", "-1"},
		"bad prefix":        {"dlq", "inspect", "q", "--prefix", "a.b"},
		"yes on replay":     {"dlq", "replay", "q", "--to", "w", "--yes"},
		"same queue":        {"dlq", "replay", "q", "--to", "q"},
	}
	for name, args := range cases {
		code, out, errOut := qlab(args...)
		assert.Equal(t, exitUsage, code, name)
		assert.Empty(t, out, name)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "%s: one line: %q", name, errOut)
	}
}

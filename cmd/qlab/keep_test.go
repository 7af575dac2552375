package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
)

// TestKeepThenDLQThenClean is the README's walk-through: a --keep run of
// lesson 15 leaves its queues, and the failed email in email-dlq; qlab
// dlq inspect reads it and leaves it, replay moves it to email-queue, and
// qlab broker clean removes every queue of the run. Only the run's own
// queues are touched: they carry its private prefix.
func TestKeepThenDLQThenClean(t *testing.T) {
	t.Parallel() // waits on the broker: beside the other tests that wait
	url := rabbittest.NeedBroker(t)
	code, out, errOut := qlab("run", "15", "--keep", "--speed", "20", "--no-color")
	require.Equal(t, exitOK, code, errOut)
	m := regexp.MustCompile(`Kept: [^.]* under the prefix\s+(qlab-[0-9a-f]+)\.`).FindStringSubmatch(out)
	require.NotNil(t, m, "a --keep run says where its queues are:\n%s", out)
	prefix := m[1]
	t.Cleanup(func() { qlab("broker", "clean", "--prefix", prefix) }) // whatever the test did not get to
	assert.Contains(t, out, "broker clean --prefix "+prefix)

	s, err := rabbit.Open(context.Background(), url, rabbit.Names{}, lab.NewClock(1), nil)
	require.NoError(t, err)
	defer func() { _ = s.Close(context.Background()) }()
	depth := func(q string) int {
		n, err := rabbit.QueueDepth(context.Background(), s.Connection(), prefix+"."+q)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, 1, depth("email-dlq"), "the last route's failed email is still in the DLQ")

	code, out, errOut = qlab("dlq", "inspect", "email-dlq", "--prefix", prefix)
	require.Equal(t, exitOK, code, errOut)
	readable(t, out)
	assert.Contains(t, out, `message-id="pC"`)
	assert.Contains(t, words(out), "showed 1 of 1 ready message;")
	assert.Equal(t, 1, depth("email-dlq"), "inspect leaves it")

	code, out, errOut = qlab("dlq", "replay", "email-dlq", "--to", "email-queue", "--reset-retries", "--prefix", prefix)
	require.Equal(t, exitOK, code, errOut)
	readable(t, out)
	assert.Contains(t, words(out), "replayed 1 message from "+prefix+".email-dlq to "+prefix+".email-queue")
	assert.Equal(t, 0, depth("email-dlq"))
	assert.Equal(t, 1, depth("email-queue"))

	code, out, errOut = qlab("broker", "clean", "--prefix", prefix)
	require.Equal(t, exitOK, code, errOut)
	readable(t, out)
	assert.Contains(t, words(out), "deleted queue "+prefix+".email-queue (1 ready message)")
	_, err = rabbit.QueueDepth(context.Background(), s.Connection(), prefix+".email-dlq")
	assert.Error(t, err, "clean removed the run's queues")
}

// TestKeepIsForABrokerRunUnderItsOwnNames: --keep on an in-memory run, or
// with the seed's bare names that broker clean --prefix cannot find, is
// refused before anything runs.
func TestKeepIsForABrokerRunUnderItsOwnNames(t *testing.T) {
	code, _, errOut := qlab("run", "7", "--keep")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--keep keeps a broker run's queues")
	code, _, errOut = qlab("run", "15", "--keep", "--names", "exact")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--prefix yourname")
}

// readable asserts that what a command printed for a pipe wraps to 80
// columns, as prose does (a message's x-death, its body, clean's summary).
func readable(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, render.Width(line), render.DefaultWidth, "too wide:\n%s", line)
	}
}

// words is out with every run of spaces and line breaks one space: what
// it says, however it wrapped.
func words(out string) string { return strings.Join(strings.Fields(out), " ") }

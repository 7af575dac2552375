package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

func TestDLQInspectNIsBounded(t *testing.T) {
	code, out, errOut := qlab("dlq", "inspect", "some.dlq", "--n", "24000")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	assert.Contains(t, errOut, "--n for dlq inspect is at most 1000, got 24000")
	code, _, errOut = qlab("dlq", "inspect", "some.dlq", "--n", "1000")
	assert.NotEqual(t, exitUsage, code, "1000 is allowed: %s", errOut)
}

// TestDLQInspectShowsWhatItReadBeforeTheBrokerStopped: the broker stops
// answering part way through the read (a proxy drops its answers after
// a few kilobytes). inspect fails within its bound, and prints first the
// messages it had read, in order, saying how many.
func TestDLQInspectShowsWhatItReadBeforeTheBrokerStopped(t *testing.T) {
	bodies := make([]string, 200)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"task":"m%d","pad":"%s"}`, i+1, strings.Repeat("x", 200))
	}
	conn, queue := rabbittest.ForeignQueue(t, nil, bodies...)
	p := rabbittest.StartProxy(t, rabbittest.NeedBroker(t))
	p.MuteAfter(20 << 10)
	t.Setenv(rabbit.EnvURL, p.URL(rabbittest.NeedBroker(t)))

	start := time.Now()
	code, out, errOut := qlab("dlq", "inspect", queue, "--n", "200")
	took := time.Since(start)
	assert.Equal(t, exitError, code, errOut)
	assert.Less(t, took, 20*time.Second, "bounded")
	ids := regexp.MustCompile(`#(\d+) message-id="m(\d+)"`).FindAllStringSubmatch(out, -1)
	require.NotEmpty(t, ids, "prints what it read: %s", errOut)
	assert.Less(t, len(ids), 200, "not all: the broker stopped answering")
	for i, m := range ids {
		assert.Equal(t, strconv.Itoa(i+1), m[1])
		assert.Equal(t, strconv.Itoa(i+1), m[2], "the queue's head, in order")
	}
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	assert.Contains(t, errOut, rabbit.ErrNoAnswer.Error())
	assert.Contains(t, errOut, fmt.Sprintf("after %d of 200 messages", len(ids)))
	assert.Contains(t, errOut, fmt.Sprintf("the %d messages above were read before it", len(ids)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Eventually(t, func() bool {
		depth, err := rabbit.QueueDepth(ctx, conn, queue)
		return err == nil && depth == 200
	}, 20*time.Second, 100*time.Millisecond, "every message back in the queue once the reader's connection is gone")
}

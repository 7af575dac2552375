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
	if testing.Short() {
		t.Skip("a broker that stops answering is a fault: make quick runs none (11 s, serial)")
	}
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
	assert.Less(t, took, 40*time.Second, "bounded: a round trip's bound (10 s) and the close")
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

// TestBrokerLatencyFlagsAreBounded: each flag out of its bound is one
// usage line naming the bound, before any broker is looked for.
func TestBrokerLatencyFlagsAreBounded(t *testing.T) {
	noBrokerHere(t) // the old code went on to the broker: fail fast instead of measuring for days
	cases := map[string]struct {
		args []string
		want string
	}{
		"n zero":          {[]string{"--n", "0"}, "--n must be 1..10000, got 0"},
		"n huge":          {[]string{"--n", "100000000"}, "--n must be 1..10000, got 100000000"},
		"ttl zero":        {[]string{"--ttl", "0s"}, "--ttl must be 1ms..10m0s"},
		"ttl sub-ms":      {[]string{"--ttl", "500us"}, "x-message-ttl counts whole milliseconds"},
		"ttl a year":      {[]string{"--ttl", "8760h"}, "got 8760h0m0s"},
		"gap negative":    {[]string{"--gap", "-1s"}, "--gap must be 0..10s"},
		"gap an hour":     {[]string{"--gap", "1h"}, "--gap must be 0..10s, got 1h0m0s"},
		"too long a run":  {[]string{"--n", "10000", "--gap", "1s"}, "would run for 2h46m41s"},
		"ttl max ok, n 1": {[]string{"--n", "1", "--ttl", "10m", "--gap", "0s"}, "no RabbitMQ broker found"},
	}
	for name, c := range cases {
		code, out, errOut := qlab(append([]string{"broker", "latency"}, c.args...)...)
		if strings.Contains(c.want, "no RabbitMQ") {
			assert.Equal(t, exitError, code, name)
		} else {
			assert.Equal(t, exitUsage, code, name)
		}
		assert.Empty(t, out, name)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "%s: one line: %q", name, errOut)
		assert.Contains(t, errOut, c.want, name)
	}
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestLesson25OnAnOldBrokerExits2: lesson 25 needs RabbitMQ 4.3; on the
// suites' 3.10.8 broker qlab says in one line what that broker did with
// the lesson's queue and exits 2, printing no lesson page before it.
func TestLesson25OnAnOldBrokerExits2(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbit.Probe(ctx, url, "test")
	require.NoError(t, err)
	if lesson.VersionAtLeast(b.Version, "4.3") {
		t.Skipf("the suites' broker is RabbitMQ %s: not too old for lesson 25", b.Version)
	}
	t.Setenv("RABBITMQ_URL", url)
	code, out, errOut := qlab("run", "25", "--no-color")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out, "nothing of the lesson is printed")
	line := strings.TrimSpace(errOut)
	assert.NotContains(t, line, "\n", "one line")
	assert.Contains(t, line, "lesson 25 needs RabbitMQ 4.3 or newer")
	assert.Contains(t, line, "RabbitMQ "+b.Version)
	assert.NotContains(t, line, "guest:guest", "no password")
}

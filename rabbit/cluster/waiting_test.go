package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// A step over 5 s says what it waits for every 5 s; a short one says
// nothing; the step's error comes back.
func TestWaitingSaysWhatItWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		c := &Cluster{progress: &out}
		err := c.waiting("n3: rabbitmqctl start_app", func() error {
			time.Sleep(12 * time.Second)
			return errors.New("boom")
		})
		assert.EqualError(t, err, "boom")
		assert.Equal(t, "  … still waiting for n3: rabbitmqctl start_app (5s)\n"+
			"  … still waiting for n3: rabbitmqctl start_app (10s)\n", out.String())

		out.Reset()
		assert.NoError(t, c.waiting("n2: rabbitmqctl stop_app", func() error { time.Sleep(time.Second); return nil }))
		assert.Empty(t, out.String())
	})
}

// Starting the nodes says, every 5 s, which are still booting.
func TestStartAllSaysWhichNodesItWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		c := &Cluster{progress: &out, state: state{Nodes: []NodeSpec{{Short: "n1"}, {Short: "n2"}, {Short: "n3"}}}}
		boot := map[string]time.Duration{"n1": 3 * time.Second, "n2": 7 * time.Second, "n3": 12 * time.Second}
		assert.NoError(t, c.startAll(context.Background(), c.Nodes, func(_ context.Context, n NodeSpec) error {
			time.Sleep(boot[n.Short])
			return nil
		}))
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		assert.Contains(t, lines, "  … still waiting for n2, n3 to boot and accept AMQP (5s)")
		assert.Contains(t, lines, "  … still waiting for n3 to boot and accept AMQP (10s)")
		assert.Contains(t, lines, "n3: up in 12.0s")
	})
}

package clustertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/queuelab/qlab/rabbit/cluster"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestGetSharesOneRunningCluster: two tests (here two calls) get the same
// cluster, every node running; Main removes it and fails the run if
// anything is left.
func TestGetSharesOneRunningCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node RabbitMQ cluster")
	}
	c := Get(t)
	if again := Get(t); again != c {
		t.Fatal("a second Get started another cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range c.Nodes {
		if st := c.State(ctx, n); st != cluster.Running {
			t.Errorf("%s is %s, want %s", n.Short, st, cluster.Running)
		}
	}
	if len(c.URLs()) != 3 {
		t.Errorf("URLs = %q, want three", c.URLs())
	}
}

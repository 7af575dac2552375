package q21

import (
	"sync"
	"testing"

	"github.com/queuelab/qlab/rabbit/cluster"
)

// The package's cluster tests run in parallel, so that the 3.10 cluster's
// tests run while the 4.3 cluster starts and runs its own; but each stops
// and revives a node of its cluster, so on one cluster they take turns.
// clustertest's turn is shared by the tests of one process: Hold is the
// turn among them. Take the cluster after t.Parallel, so that the turn
// on the shared one is held only while a test runs.
var turns sync.Map // *cluster.Cluster → *sync.Mutex

// Hold gives c to t alone until t ends. Call it after t.Parallel: a test
// that holds c while it waits for its parallel phase blocks every other
// sequential test of the package.
func Hold(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	mu, _ := turns.LoadOrStore(c, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	t.Cleanup(mu.(*sync.Mutex).Unlock)
}

// Package clustertest gives the tests of a package one RabbitMQ cluster,
// started on first use and removed when the package's tests end:
//
//	func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }
//
//	func TestFailover(t *testing.T) {
//		c := clustertest.Get(t) // skips where no cluster can start
//		...
//	}
//
// A test that kills a node revives it before it ends (Revive in
// t.Cleanup), so the next test finds every node running.
//
// make test starts one cluster for every package instead (a cluster is
// three Erlang VMs: five packages starting their own at once on 2 cores
// cost minutes of CPU and 2 GB): it sets SharedEnv to the cluster's state
// file, and Get then waits for that cluster, never starts or removes one,
// and holds a lock on it for each test that uses it, so that tests of
// different packages, which stop nodes, take turns.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuelab/qlab/rabbit/cluster"
)

// RequireEnv names the variable that turns "no cluster can start here"
// from a skip into a failure (CI sets it to 1).
const RequireEnv = "QLAB_REQUIRE_BROKER"

// StartTimeout bounds the shared cluster's start.
const StartTimeout = 5 * time.Minute

// SharedEnv names the variable that points Get at a cluster another
// process started (make test): its value is the cluster's state file
// (qlab broker cluster up --state FILE). FILE.ready appears once the
// cluster is up, FILE.failed if it could not start (Get then starts one
// of the package's own, as without SharedEnv); FILE.lock is the lock the
// packages take turns on.
const SharedEnv = "QLAB_TEST_CLUSTER"

// TurnTimeout bounds how long a test waits for the other packages'
// tests to be done with the shared cluster.
const TurnTimeout = 15 * time.Minute

var inMain atomic.Bool // Main runs the package's tests

var (
	mu      sync.Mutex
	shared  *cluster.Cluster // started by the first Get
	initErr error            // why it could not start
	started bool
	outside bool // shared came from SharedEnv: taken in turns, never removed here
)

// The 4.3 cluster has a lock of its own: a Get never waits for its start.
var (
	mu43      sync.Mutex
	shared43  *cluster.Cluster // started by the first Get43
	initErr43 error
	started43 bool
)

// Main runs m's tests and then removes the shared cluster, if a test
// started it; it returns the exit code for os.Exit. Removing it fails the
// run when anything is left behind.
func Main(m *testing.M) int {
	inMain.Store(true)
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	mu43.Lock()
	defer mu43.Unlock()
	own := shared
	if outside {
		own = nil // make test's: it removes that one
	}
	for _, c := range []*cluster.Cluster{own, shared43} {
		if c != nil && remove(c) != nil {
			code = 1
		}
	}
	return code
}

// remove takes a shared cluster down and checks nothing of it is left.
func remove(c *cluster.Cluster) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Down(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "clustertest: removing the shared cluster:", err)
		return err
	}
	if left := c.Leftovers(ctx); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "clustertest: left behind after down:", left)
		return errors.New("left behind")
	}
	return nil
}

// Get43 is Get for a cluster of RabbitMQ 4.3 nodes: run in the chroot
// scripts/rabbitmq.sh builds (cluster.BuiltRoot), started on first use and
// removed by Main. Where the chroot is not built, or the test is not
// root, it skips t with the reason, or fails t under QLAB_REQUIRE_BROKER=1.
func Get43(t testing.TB) *cluster.Cluster {
	t.Helper()
	mu43.Lock()
	defer mu43.Unlock()
	if !inMain.Load() {
		t.Fatal("clustertest.Get43 needs the package's TestMain to call clustertest.Main")
	}
	if !started43 {
		started43 = true
		root, err := cluster.BuiltRoot("4.3")
		if err != nil {
			initErr43 = fmt.Errorf("%w (%v)", cluster.ErrUnavailable, err)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
			defer cancel()
			shared43, initErr43 = cluster.Up(ctx, cluster.Options{Prefix: "qlabtest", Root: root, Lean: true})
			watch(shared43)
		}
	}
	if initErr43 != nil {
		SkipOrFail(t, initErr43)
	}
	return shared43
}

// Get returns the package's shared cluster, starting it on the first call
// (about half a minute on two cores). Where no cluster can start it skips
// t with the reason, or fails t under QLAB_REQUIRE_BROKER=1. It fails t if
// the package's TestMain does not call Main, which removes the cluster.
func Get(t testing.TB) *cluster.Cluster {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !inMain.Load() {
		t.Fatal("clustertest.Get needs the package's TestMain to call clustertest.Main")
	}
	if !started {
		started = true
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		if file := os.Getenv(SharedEnv); file != "" {
			shared, initErr = awaitShared(ctx, file)
			outside = shared != nil
		}
		if !outside {
			cluster.ReapOrphans(cluster.TestPrefixes...)
			shared, initErr = cluster.Up(ctx, cluster.Options{Prefix: "qlabtest", Lean: true})
			watch(shared)
		}
	}
	if initErr != nil {
		SkipOrFail(t, initErr)
	}
	if outside {
		takeTurn(t, shared)
	}
	return shared
}

// SkipOrFail skips t because no cluster can start (err wraps
// cluster.ErrUnavailable), or fails it: under QLAB_REQUIRE_BROKER=1, or for
// any other reason.
func SkipOrFail(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("starting a cluster: %v", err)
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1 but: %v", RequireEnv, err)
	}
	t.Skipf("skipping: %v", err)
}

// watch makes each local node of c go when this test process does, however
// it ends: Main's Down runs only when the tests return.
func watch(c *cluster.Cluster) {
	if c == nil || c.Kind != cluster.Local {
		return
	}
	for _, n := range c.Nodes {
		if err := cluster.WatchOwner(n, c.Dir); err != nil {
			fmt.Fprintln(os.Stderr, "clustertest:", err)
		}
	}
}

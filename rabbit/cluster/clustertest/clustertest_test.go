package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	if file := os.Getenv(SharedEnv); file != "" && c.StateFile() != file {
		t.Errorf("with %s=%s, Get gave the cluster of %q", SharedEnv, file, c.StateFile())
	}
	if len(c.URLs()) != 3 {
		t.Errorf("URLs = %q, want three", c.URLs())
	}
}

// TestTurnsExcludeAnotherHolder: while a test of this process holds the
// shared cluster's lock, another open of the lock file (as another
// package's process makes) cannot take it, a second holder here does not
// wait, and once both released it is free again.
func TestTurnsExcludeAnotherHolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.json.lock")
	first, err := acquire(file, time.Second)
	if err != nil || !first {
		t.Fatalf("acquire = %v, %v; want the first turn", first, err)
	}
	if again, err := acquire(file, time.Second); err != nil || again {
		t.Fatalf("a second holder in the same process: %v, %v; want it to share the turn", again, err)
	}
	if lockFree(t, file) {
		t.Fatal("another process could take the lock while this one holds it")
	}
	release()
	if lockFree(t, file) {
		t.Fatal("the lock was free with one holder left")
	}
	release()
	if !lockFree(t, file) {
		t.Fatal("the lock is still held after the last release")
	}
}

// lockFree tries file's lock through a descriptor of its own, as another
// process would, and releases it at once.
func lockFree(t *testing.T, file string) bool {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// TestAwaitSharedSaysWhenTheClusterFailed: make test's cluster that could
// not start (FILE.failed) sends the package back to a cluster of its own,
// and one never ready ends the wait with its bound, naming the variable.
func TestAwaitSharedSaysWhenTheClusterFailed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.json")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if c, err := awaitShared(ctx, file); c != nil || err == nil || !strings.Contains(err.Error(), SharedEnv) {
		t.Fatalf("never ready: %v, %v; want an error naming %s", c, err, SharedEnv)
	}
	if err := os.WriteFile(file+".failed", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := awaitShared(context.Background(), file); c != nil || err != nil {
		t.Fatalf("failed: %v, %v; want neither (the package starts its own)", c, err)
	}
}

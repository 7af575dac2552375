package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuelab/qlab/rabbit/cluster"
)

// awaitShared waits, within ctx, for the cluster recorded in file to be
// up (file.ready) and loads it. It returns a nil cluster and no error when
// that cluster could not start (file.failed): the package then starts
// its own, which skips or fails with the reason.
func awaitShared(ctx context.Context, file string) (*cluster.Cluster, error) {
	for {
		if _, err := os.Stat(file + ".ready"); err == nil {
			c, err := cluster.Load(file, nil)
			if err != nil {
				return nil, fmt.Errorf("%s=%s: %v", SharedEnv, file, err)
			}
			return c, nil
		}
		if _, err := os.Stat(file + ".failed"); err == nil {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s=%s: the cluster was not up after %v", SharedEnv, file, StartTimeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// turn is this process's hold on a shared cluster's lock: an flock, which
// the kernel releases when the process ends however it ends, counted so
// that the tests of one package (which shared their own cluster before)
// hold it together.
var turn struct {
	sync.Mutex
	holders int
	f       *os.File
}

// takeTurn waits until no other process uses c, holds it until t ends,
// and makes sure every node of c runs first: a test of another package
// may have ended with a node stopped (it revives in a cleanup, which a
// failed revive or a killed process skips).
func takeTurn(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	first, err := acquire(c.StateFile()+".lock", TurnTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	if !first {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range c.Nodes {
		switch c.State(ctx, n) {
		case cluster.Stopped:
			if err := c.Revive(ctx, n.Short); err != nil {
				t.Fatalf("the shared cluster's %s was left stopped and does not revive: %v", n.Short, err)
			}
		case cluster.Gone:
			t.Fatalf("the shared cluster's %s is gone (%s)", n.Short, n.Name)
		}
	}
}

// acquire takes the lock in file, waiting at most bound for another
// process to release it; first says this process did not hold it yet.
func acquire(file string, bound time.Duration) (first bool, err error) {
	turn.Lock()
	defer turn.Unlock()
	if turn.holders > 0 {
		turn.holders++
		return false, nil
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, err
	}
	deadline := time.Now().Add(bound)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return false, fmt.Errorf("waiting for the other packages' tests to be done with the shared cluster (%s): %v", file, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	turn.f, turn.holders = f, 1
	return true, nil
}

// release ends one holder's turn; the last one unlocks.
func release() {
	turn.Lock()
	defer turn.Unlock()
	if turn.holders--; turn.holders == 0 {
		turn.f.Close() // closing the only descriptor releases the flock
		turn.f = nil
	}
}

// Shared returns the cluster make test started (SharedEnv), with t's turn
// on it taken until t ends, or nil where there is none: SharedEnv unset,
// or that cluster could not start. Unlike Get it never starts a cluster:
// a test of the cluster commands themselves starts its own through them.
func Shared(t testing.TB) *cluster.Cluster {
	t.Helper()
	file := os.Getenv(SharedEnv)
	if file == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	c, err := awaitShared(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		takeTurn(t, c)
	}
	return c
}

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// localDriver runs each node as a rabbitmq-server process of this machine.
type localDriver struct {
	server string // rabbitmq-server's path; "" for a loaded cluster
}

// start boots the first node, then the others at once, each joining the
// first as it boots (NodeSpec.Seed): no rabbitmqctl and no second boot.
// Joined with stop_app, join_cluster and start_app instead, each joining
// node booted twice and ran four rabbitmqctl VMs, and on two busy cores
// beside make test one 4.3 start_app ran past two minutes.
func (d *localDriver) start(ctx context.Context, c *Cluster) error {
	start := func(ctx context.Context, n NodeSpec) error { return StartLocal(ctx, d.server, n) }
	if err := c.startAll(ctx, c.Nodes[:1], start); err != nil {
		return err
	}
	return c.startAll(ctx, c.Nodes[1:], start)
}

func (d *localDriver) ctl(ctx context.Context, n NodeSpec, args ...string) (string, error) {
	return CtlIn(ctx, n.Root, n.Name, args...)
}

func (d *localDriver) alive(_ context.Context, n NodeSpec) bool { return n.Pid() > 0 }

func (d *localDriver) remove(_ context.Context, n NodeSpec) error { return RemoveLocal(n) }

// cleanup waits for the nodes' helper processes (erl_child_setup,
// inet_gethost, a rabbitmqctl still ending) to follow their node out,
// kills those that do not (their environment names the cluster: they
// are its own; one outlived the 10 s wait at a load average near 10),
// and deletes the cluster's directory (Load has checked it is the one Up
// made).
func (d *localDriver) cleanup(_ context.Context, c *Cluster) error {
	for deadline := time.Now().Add(helpersExit(c)); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if len(processesNaming(c.ID)) == 0 {
			break
		}
	}
	for _, pid := range processesNaming(c.ID) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		awaitGone(pid, c.ID, 5*time.Second)
	}
	if left := processesNaming(c.ID); len(left) > 0 {
		return fmt.Errorf("processes of the cluster still run after SIGKILL: %v", left)
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		return err
	}
	if c.Root != "" {
		return releaseProc(c.Root)
	}
	return nil
}

// helpersExit bounds the wait for a cluster's helper processes to exit:
// longer in a chroot, whose 4.3 nodes took over 10 s to let go of theirs
// with the load average above 30 on two cores.
func helpersExit(c *Cluster) time.Duration {
	if c.Root != "" {
		return 40 * time.Second
	}
	return 10 * time.Second
}

func (d *localDriver) leftovers(_ context.Context, c *Cluster) []string {
	var left []string
	for _, pid := range processesNaming(c.ID) {
		left = append(left, fmt.Sprintf("process %d", pid))
	}
	if _, err := os.Stat(c.Dir); err == nil {
		left = append(left, "directory "+c.Dir)
	}
	return left
}

// processesNaming lists the processes (other than this one and the
// nodes' watchers, WatchOwner) whose command line or environment contains s.
func processesNaming(s string) []int {
	var pids []int
	for _, pid := range processes() {
		if pid != os.Getpid() && processNames(pid, s) && !isWatcher(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// isWatcher reports whether process pid is a node's watcher or one of its
// children (WatchOwner).
func isWatcher(pid int) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && bytes.Contains(env, []byte("\x00"+watcherEnv+"\x00"))
}

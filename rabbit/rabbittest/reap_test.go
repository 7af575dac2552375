package rabbittest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit/cluster"
)

// ownerEnv makes this test binary a node's owner that never cleans up:
// TestHelperOwner starts a node, prints its name and sleeps until killed.
const ownerEnv = "QLAB_TEST_NODE_OWNER"

func TestHelperOwner(t *testing.T) {
	prefix := os.Getenv(ownerEnv)
	if prefix == "" {
		t.Skip("a helper process for TestNodeGoesWithItsOwner")
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeStart)
	defer cancel()
	n, err := NewNode(ctx, prefix)
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		return
	}
	os.Stdout.WriteString("node " + n.Name + " " + n.spec.Dir + "\n")
	time.Sleep(10 * time.Minute)
}

// startOwner runs TestHelperOwner in a child process and returns it and
// the node it started.
func startOwner(t *testing.T, prefix string) (owner *exec.Cmd, node cluster.NodeSpec) {
	t.Helper()
	owner = exec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "-test.timeout=15m")
	owner.Env = append(os.Environ(), ownerEnv+"="+prefix)
	out, err := owner.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, owner.Start())
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	if strings.HasPrefix(line, "error ") {
		SkipOrFail(t, ErrNoServer)
	}
	f := strings.Fields(line)
	require.Len(t, f, 3, line)
	return owner, cluster.NodeSpec{Name: f[1], Dir: f[2]}
}

// TestNodeGoesWithItsOwner: a test process killed by SIGKILL (as go test
// -timeout and Ctrl-C kill it, before any cleanup) leaves no node behind:
// the watcher removes it, process and directory.
func TestNodeGoesWithItsOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private node")
	}
	t.Parallel() // a node start mostly waits: beside the others
	owner, n := startOwner(t, "qlabtest")
	require.NotZero(t, n.Pid(), "the node runs while its owner lives")
	require.NoError(t, owner.Process.Signal(syscall.SIGKILL))
	_ = owner.Wait()
	assert.Eventually(t, func() bool { return n.Pid() == 0 }, 60*time.Second, 500*time.Millisecond,
		"node %s outlived its owner", n.Name)
	assert.Eventually(t, func() bool { _, err := os.Stat(n.Dir); return os.IsNotExist(err) },
		10*time.Second, 200*time.Millisecond, "its directory %s stayed", n.Dir)
}

// TestReapOrphansRemovesOnlyTheDeadOwnersNodes: with its watcher gone too,
// a dead owner's node is removed by the next ReapOrphans of its prefix,
// and a live owner's node is not. qlabreap is one of TestPrefixes, so a
// SIGINT that kills an owner while its node boots leaves nothing either.
func TestReapOrphansRemovesOnlyTheDeadOwnersNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts private nodes")
	}
	t.Parallel() // its own prefix: no other test reaps or counts its nodes
	dead, orphan := startOwner(t, "qlabreap")
	_, kept := startOwner(t, "qlabreap")
	t.Cleanup(func() { _ = cluster.RemoveLocal(kept) })
	// Kill the orphan's watcher first (it is the only sh naming the node),
	// then its owner: nothing is left to clean up but ReapOrphans.
	procs, _ := os.ReadDir("/proc")
	killed := 0
	for _, p := range procs {
		env, _ := os.ReadFile("/proc/" + p.Name() + "/environ")
		comm, _ := os.ReadFile("/proc/" + p.Name() + "/comm")
		if string(comm) == "sh\n" && strings.Contains(string(env), "\x00NODE="+orphan.Name+"\x00") {
			pid, _ := strconv.Atoi(p.Name())
			require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
			killed++
		}
	}
	require.Equal(t, 1, killed, "the orphan's watcher")
	require.NoError(t, dead.Process.Signal(syscall.SIGKILL))
	_ = dead.Wait()

	// With its watcher killed only a reap removes the orphan: this one,
	// or another process's reap of the test prefixes (a private node's
	// start elsewhere in make test, its clean-up), which may come first,
	// as it did in a quiet run on 2026-11-28. Either way the orphan goes,
	// and this reap takes nothing else.
	reaped := cluster.ReapOrphans("qlabreap")
	assert.Subset(t, []string{orphan.Name}, reaped)
	assert.Zero(t, orphan.Pid())
	assert.NotZero(t, kept.Pid(), "a live owner's node stays")
	assert.Empty(t, cluster.ReapOrphans("qlabnone"), "another prefix reaps nothing")
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/rabbit/cluster/clustertest"
)

// privateClusterState points the cluster commands' state file (under the
// user cache dir) at a directory of t's own, and returns that file.
func privateClusterState(t *testing.T) string {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	file, err := cluster.DefaultStateFile()
	require.NoError(t, err)
	return file
}

func TestBrokerClusterBadInput(t *testing.T) {
	privateClusterState(t)
	cases := map[string][]string{
		"no command":        {"broker", "cluster"},
		"unknown command":   {"broker", "cluster", "frob"},
		"kill without node": {"broker", "cluster", "kill"},
		"two nodes":         {"broker", "cluster", "revive", "n1", "n2"},
		"up with argument":  {"broker", "cluster", "up", "n1"},
		"zero timeout":      {"broker", "cluster", "up", "--timeout", "0s"},
		"bad flag":          {"broker", "cluster", "status", "--frob"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := qlab(args...)
			assert.Equal(t, exitUsage, code, "stdout %q stderr %q", out, errOut)
			assert.NotEmpty(t, errOut)
		})
	}
}

func TestBrokerClusterWithNoneRecorded(t *testing.T) {
	privateClusterState(t)
	code, out, _ := qlab("broker", "cluster", "down")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "no cluster is recorded: nothing to remove\n", out)
	for _, verb := range [][]string{{"status"}, {"kill", "n1"}, {"revive", "n1"}} {
		code, _, errOut := qlab(append([]string{"broker", "cluster"}, verb...)...)
		assert.Equal(t, exitError, code, verb)
		assert.Equal(t, "qlab: no cluster is up; start one with: qlab broker cluster up\n", errOut, verb)
	}
}

// TestBrokerClusterOwnerMustRun: up --owner names a process that runs,
// else the nodes would be removed at once; a usage error says so.
func TestBrokerClusterOwnerMustRun(t *testing.T) {
	privateClusterState(t)
	for _, pid := range []string{"999999999", "-2"} {
		code, _, errOut := qlab("broker", "cluster", "up", "--owner", pid)
		assert.Equal(t, exitUsage, code, pid)
		assert.Contains(t, errOut, "--owner "+pid+" is no running process", pid)
	}
}

// TestBrokerClusterStateFlag: --state FILE is the record every verb reads,
// not the cache's: status finds the nodes recorded there, down removes
// that record, and the cache's stays untouched.
func TestBrokerClusterStateFlag(t *testing.T) {
	cached := privateClusterState(t)
	writeClusterState(t, cached, t.TempDir())
	file := filepath.Join(t.TempDir(), "elsewhere.json")
	code, out, _ := qlab("broker", "cluster", "down", "--state", file)
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "no cluster is recorded: nothing to remove\n", out)
	writeClusterState(t, file, t.TempDir())
	code, out, _ = qlab("broker", "cluster", "status", "--state", file)
	assert.Equal(t, exitError, code)
	assert.Equal(t, 3, strings.Count(out, " down "), out)
	code, _, _ = qlab("broker", "cluster", "down", "--state", file)
	assert.Equal(t, exitOK, code)
	assert.NoFileExists(t, file)
	assert.FileExists(t, cached)
}

// writeClusterState records a cluster of three local nodes on closed
// ports, as if up had started it, with node directories under dir.
func writeClusterState(t *testing.T, file, dir string) {
	id := "qlabtest-1-beef"
	var nodes []string
	for i := 1; i <= 3; i++ {
		nodes = append(nodes, fmt.Sprintf(`{"short":"n%d","name":"%s-n%d@localhost","port":%d,"mgmt_port":1,"prom_port":1,"dir":%q}`,
			i, id, i, i, filepath.Join(dir, id, fmt.Sprintf("n%d", i))))
	}
	state := fmt.Sprintf(`{"kind":"local","id":%q,"dir":%q,"nodes":[%s]}`, id, filepath.Join(dir, id), strings.Join(nodes, ","))
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(state), 0o644))
}

func TestBrokerClusterUnknownNodeIsAUsageError(t *testing.T) {
	file := privateClusterState(t)
	writeClusterState(t, file, t.TempDir())
	for _, verb := range []string{"kill", "revive"} {
		code, _, errOut := qlab("broker", "cluster", verb, "n7")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, `no such node in the cluster: "n7" (the nodes are n1, n2, n3)`)
		code, _, _ = qlab("broker", "cluster", verb, "rabbit@localhost")
		assert.Equal(t, exitUsage, code, "the shared node is no node of the cluster")
	}
}

func TestBrokerClusterRefusesAStateFileItDidNotWrite(t *testing.T) {
	file := privateClusterState(t)
	writeClusterState(t, file, t.TempDir())
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, regexp.MustCompile(`"dir":"[^"]*/n1"`).ReplaceAll(b, []byte(`"dir":"/"`)), 0o644))
	code, _, errOut := qlab("broker", "cluster", "down")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, `node n1's directory "/" is not under the cluster's own`)
}

// TestBrokerClusterLifecycle runs the commands a demo runs, on a real
// cluster: up, status, kill the leader of a quorum queue, up refusing to
// start over a stopped node, revive, up finding the cluster up, down with
// a node stopped, and down again. Under make test it runs the commands
// between up and down on the recipe's cluster (its --state) instead of
// starting a second one: the recipe ran up, whose output it left beside
// the state file, and runs down, which fails the run if anything is left.
func TestBrokerClusterLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node RabbitMQ cluster (about half a minute)")
	}
	if os.Getenv(clustertest.SharedEnv) != "" {
		t.Parallel() // it waits for its turn on the cluster
		c := clustertest.Shared(t)
		if c == nil {
			clustertest.SkipOrFail(t, fmt.Errorf("%w: make test's cluster did not start (see its output)", cluster.ErrUnavailable))
		}
		upLog, err := os.ReadFile(filepath.Join(filepath.Dir(c.StateFile()), "up.log"))
		require.NoError(t, err, "make test writes up's output beside the cluster's state file")
		checkUpOutput(t, c, string(upLog), string(upLog))
		queue := fmt.Sprintf("qlabtest.cluster.cli-%d", os.Getpid())
		t.Cleanup(func() { leaveSharedAsFound(t, c, queue) })
		clusterVerbs(t, c, queue, "--state", c.StateFile())
		return
	}
	file := privateClusterState(t)
	// --owner: the nodes go with this test binary however it ends (a
	// SIGINT to make test skips t.Cleanup and used to leave all three).
	code, out, errOut := qlab("broker", "cluster", "up", "--owner", strconv.Itoa(os.Getpid()))
	if code != exitOK {
		clustertest.SkipOrFail(t, fmt.Errorf("%w: %s", cluster.ErrUnavailable, errOut))
	}
	c, err := cluster.Load(file, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Down(context.Background()) })
	checkUpOutput(t, c, out, errOut)
	clusterVerbs(t, c, "qlabtest.cluster.cli")

	code, _, _ = qlab("broker", "cluster", "kill", "n3") // down must remove a stopped node too
	require.Equal(t, exitOK, code)
	code, out, errOut = qlab("broker", "cluster", "down")
	require.Equal(t, exitOK, code)
	assert.NotContains(t, errOut, "guest:guest", "down names the nodes, not their URLs")
	assert.Equal(t, "removed cluster "+c.ID+": no process, port or directory left\n", out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	assert.Empty(t, c.Leftovers(ctx))
	code, out, _ = qlab("broker", "cluster", "down")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "no cluster is recorded: nothing to remove\n", out)
}

// checkUpOutput checks what cluster up printed on starting c.
func checkUpOutput(t *testing.T, c *cluster.Cluster, out, errOut string) {
	t.Helper()
	assert.Regexp(t, `n3: (starting .*, )?joining `, errOut) // as it boots, or with rabbitmqctl (Docker)
	assert.Regexp(t, `cluster up in \d+\.\ds`, errOut)
	assert.Contains(t, out, "RABBITMQ_URL="+c.URLList()+"\n")
	assert.Contains(t, out, "management UI (guest/guest): http://127.0.0.1:")
	assert.Contains(t, out, c.Nodes[2].MetricsURL())
}

// clusterVerbs runs, on the running cluster c, status, kill of queue's
// leader, status, up refusing over the stopped node, revive and up
// finding the cluster up; flags (--state) go to each command.
func clusterVerbs(t *testing.T, c *cluster.Cluster, queue string, flags ...string) {
	t.Helper()
	cmd := func(args ...string) (int, string, string) {
		return qlab(append(append([]string{"broker", "cluster"}, args...), flags...)...)
	}
	declareQuorum(t, c.URLs()[1], queue)
	code, out, _ := cmd("status")
	require.Equal(t, exitOK, code)
	assert.Equal(t, 3, strings.Count(out, " running "), out)
	assert.Equal(t, 3, strings.Count(out, "amqp://guest:xxxxx@"), "status shows each node's URL, password hidden:\n%s", out)
	line := regexp.MustCompile(regexp.QuoteMeta(queue) + `  leader (n\d)  members n1 n2 n3  online n1 n2 n3\n`).FindStringSubmatch(out)
	require.NotNil(t, line, out)
	leader := line[1]

	code, out, _ = cmd("kill", leader)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, leader+" is stopped\n")
	// kill waits for the election, so the status after it lists the queue
	// (at once, 3.10.8 listed none of its quorum queues once).
	assert.Regexp(t, "  "+regexp.QuoteMeta(queue)+": new leader n\\d\n", out)
	assert.NotContains(t, out, "new leader "+leader)
	code, out, _ = cmd("status")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "  "+leader+"  stopped ")
	assert.Regexp(t, regexp.QuoteMeta(queue)+`  leader n\d  members n1 n2 n3  online`, out)
	assert.NotRegexp(t, regexp.QuoteMeta(queue)+`  leader `+leader, out, "a new leader leads")
	assert.NotRegexp(t, regexp.QuoteMeta(queue)+`  .*online .*`+leader, out)
	code, _, errOut := cmd("up")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "a cluster is up with a node stopped")

	code, out, _ = cmd("revive", leader)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, leader+" is running\n")
	code, out, _ = cmd("up")
	assert.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(out, "a cluster is already up:\n"), out)
}

// leaveSharedAsFound revives any node of make test's cluster a failed
// test left stopped and deletes queue from it.
func leaveSharedAsFound(t *testing.T, c *cluster.Cluster, queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range c.Nodes {
		if c.State(ctx, n) == cluster.Stopped {
			assert.NoError(t, c.Revive(ctx, n.Short), "reviving %s", n.Short)
		}
	}
	conn, err := amqp.Dial(c.URLs()[0])
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDelete(queue, false, false, false)
	assert.NoError(t, err, "deleting %s", queue)
}

// declareQuorum declares a durable quorum queue on url.
func declareQuorum(t *testing.T, url, queue string) {
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclare(queue,
		true,  // durable
		false, // autoDelete
		false, // exclusive
		false, // noWait
		amqp.Table{"x-queue-type": "quorum"})
	require.NoError(t, err)
}

// TestBrokerClusterOnNodesThatAreGone: a recorded cluster whose processes
// exited (a reboot). Each command says so in one line, without the page
// of diagnostics rabbitmqctl prints, and down clears the record.
func TestBrokerClusterOnNodesThatAreGone(t *testing.T) {
	file := privateClusterState(t)
	writeClusterState(t, file, t.TempDir())
	code, out, errOut := qlab("broker", "cluster", "status")
	assert.Equal(t, exitError, code)
	assert.Equal(t, 3, strings.Count(out, " down "), out)
	assert.Equal(t, "qlab: no node of the cluster is running\n", errOut)

	code, _, errOut = qlab("broker", "cluster", "revive", "n2")
	assert.Equal(t, exitError, code)
	assert.Equal(t, "qlab: n2 is gone, not stopped: its process exited, so start_app cannot reach it; "+
		"remove the cluster and start a new one\n", errOut)

	if _, err := cluster.ServerCommand(); err == nil { // rabbitmqctl is there to fail
		code, _, errOut = qlab("broker", "cluster", "kill", "n2")
		assert.Equal(t, exitError, code)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		assert.Contains(t, errOut, "rabbitmqctl stop_app on qlabtest-1-beef-n2@localhost")
	}

	code, out, _ = qlab("broker", "cluster", "down")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "removed cluster qlabtest-1-beef")
	assert.NoFileExists(t, file)
}

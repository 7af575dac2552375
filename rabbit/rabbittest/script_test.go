package rabbittest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/cluster"
)

// TestScriptUpIsIdempotentAndDownLeavesNothing runs scripts/rabbitmq.sh
// on a port of its own in the 4.3 chroot .ci/run builds: up starts a 4.3
// node, which serves rabbitmq_prometheus on its AMQP port + 10020 (Q22
// reads it), a second up finds it (same process), down as another owner
// leaves it, down as its owner stops it and removes its data.
func TestScriptUpIsIdempotentAndDownLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a RabbitMQ 4.3 node")
	}
	t.Parallel() // a port and a node name of its own
	root, err := cluster.BuiltRoot("4.3")
	if err == nil && os.Geteuid() != 0 {
		err = fmt.Errorf("%w: the script needs root", cluster.ErrNoServer)
	}
	if err != nil {
		SkipOrFail(t, err)
	}
	port := scriptPort(t)
	name := "qlab43_" + strconv.Itoa(port)
	owner := strconv.Itoa(os.Getpid())
	script := func(ownerPID string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join("..", "..", "scripts", "rabbitmq.sh"), args...)
		cmd.Env = append(os.Environ(), "QLAB_RABBITMQ43_PORT="+strconv.Itoa(port), "QLAB_RABBITMQ_OWNER="+ownerPID)
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%v: %s", err, ee.Stderr)
		}
		return strings.TrimSpace(string(out)), err
	}
	t.Cleanup(func() { _, _ = script("", "down", "4.3") })

	url, err := script(owner, "up", "4.3")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", port), url)
	b, err := rabbit.Probe(t.Context(), url, "test")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(b.Version, "4.3."), "version %s", b.Version)
	// The plugin's listener may start after AMQP's: poll, bounded.
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", port+10020)
	client := http.Client{Timeout: 10 * time.Second}
	var body []byte
	served, err := rabbit.PollUntil(t.Context(), 200*time.Millisecond, 30*time.Second, func() (bool, error) {
		resp, err := client.Get(metrics)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, err
	})
	require.NoError(t, err)
	require.True(t, served, "no rabbitmq_prometheus at %s within 30 s", metrics)
	assert.Contains(t, string(body), "rabbitmq_build_info", "the broker's own metrics")
	pidFile := filepath.Join(root, "var", "lib", "qlab", name, "pid")
	first, err := os.ReadFile(pidFile)
	require.NoError(t, err)

	again, err := script(owner, "up", "4.3")
	require.NoError(t, err)
	assert.Equal(t, url, again)
	second, _ := os.ReadFile(pidFile)
	assert.Equal(t, string(first), string(second), "a second up finds the node, it does not start another")

	_, err = script("1", "down", "4.3")
	require.NoError(t, err)
	_, err = rabbit.Probe(t.Context(), url, "test")
	assert.NoError(t, err, "down as another owner leaves the node running")

	_, err = script(owner, "down", "4.3")
	require.NoError(t, err)
	_, err = net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	assert.Error(t, err, "nothing listens on the node's port after down")
	assert.NoDirExists(t, filepath.Join(root, "var", "lib", "qlab", name), "down removes the node's data")
}

// scriptPort is a free AMQP port whose distribution port (+20000) is free
// too and within the script's range.
func scriptPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		ports, err := cluster.FreePorts(1)
		require.NoError(t, err)
		p := ports[0]
		if p <= 25535 && cluster.PortFree(p+20000) && cluster.PortFree(p+10020) {
			return p
		}
	}
	t.Fatal("no free ports for the script's node")
	return 0
}

package rabbittest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/queuelab/qlab/rabbit/cluster"
)

// A private node is for tests that disturb a broker (close its
// connections, restart it, delete queues behind a run's back): the shared
// node on 5672 is never stopped, restarted or cut. Each private node has
// its own node name, AMQP and distribution ports, data and log directories
// and a config file whose listener names its port (the global config pins
// 5672). Measured on RabbitMQ 3.10.8 here: it starts in about 2-11 s,
// stop_app+start_app takes about 5 s, close_all_connections and stop about
// 1 s each.

// nodeStart bounds a private node's start-up.
const nodeStart = 90 * time.Second

// Node is a private RabbitMQ node a test started. Remove it when done
// (StartNode does that in t.Cleanup).
type Node struct {
	Name string // Erlang node name, e.g. qlabfault-4242-1a2b@localhost
	URL  string // amqp://guest:guest@127.0.0.1:<Port>/
	Port int    // AMQP listener
	spec cluster.NodeSpec
}

// ErrNoServer means rabbitmq-server cannot be started here: the test
// skips with it (or fails under QLAB_REQUIRE_BROKER=1).
var ErrNoServer = cluster.ErrNoServer

// StartNode starts a private node for t and removes it (process and
// directories) when t ends. Without rabbitmq-server it skips t with the
// reason, or fails it under QLAB_REQUIRE_BROKER=1.
func StartNode(t testing.TB) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeStart)
	defer cancel()
	n, err := NewNode(ctx, "qlabtest")
	if err != nil {
		SkipOrFail(t, err)
	}
	t.Cleanup(func() {
		if err := n.Remove(); err != nil {
			t.Errorf("removing private node %s: %v", n.Name, err)
		}
	})
	return n
}

// SkipOrFail skips t because of err, or fails it under
// QLAB_REQUIRE_BROKER=1.
func SkipOrFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1 but: %v", RequireEnv, err)
	}
	t.Skipf("skipping: %v", err)
}

// NewNode starts a private node named <prefix>-<pid>-<random>@localhost on
// free ports (rabbit/cluster starts it: the cluster's nodes are made the
// same way) and waits until it accepts AMQP connections. The error wraps
// ErrNoServer when rabbitmq-server is missing or cannot run as this user.
//
// The node does not outlive this process: a watcher removes it within
// seconds of the process's end however it ends (cluster.WatchOwner), and
// the start first removes nodes a dead test process left
// (cluster.ReapOrphans).
func NewNode(ctx context.Context, prefix string) (*Node, error) {
	server, err := cluster.ServerCommand()
	if err != nil {
		return nil, err
	}
	cluster.ReapOrphans(cluster.TestPrefixes...)
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", prefix+"-node-")
	if err != nil {
		return nil, err
	}
	spec := cluster.NodeSpec{
		Short:    "node",
		Name:     fmt.Sprintf("%s-%d-%04x@localhost", prefix, os.Getpid(), rand.IntN(1<<16)),
		Port:     ports[0],
		DistPort: ports[1],
		Dir:      dir,
	}
	if err := cluster.StartLocal(ctx, server, spec); err != nil {
		return nil, err
	}
	if err := cluster.WatchOwner(spec, ""); err != nil {
		fmt.Fprintln(os.Stderr, "rabbittest:", err, "(the node is removed by the test's cleanup only)")
	}
	return &Node{Name: spec.Name, URL: spec.URL(), Port: spec.Port, spec: spec}, nil
}

// AwaitUp waits, within ctx, until the node accepts AMQP connections
// again (after Ctl("start_app")).
func (n *Node) AwaitUp(ctx context.Context) error {
	if err := cluster.AwaitAMQP(ctx, n.Port); err != nil {
		return fmt.Errorf("private node %s did not accept connections on port %d: %w; its log: %s",
			n.Name, n.Port, err, n.spec.LogTail())
	}
	return nil
}

// Ctl runs rabbitmqctl -n <node> args within ctx and a minute, and
// returns its standard output. As root the Debian wrapper runs it as the
// rabbitmq user, whose Erlang cookie the node shares.
func (n *Node) Ctl(ctx context.Context, args ...string) (string, error) {
	return cluster.Ctl(ctx, n.Name, args...)
}

// Queues lists the names of the queues on the node.
func (n *Node) Queues(ctx context.Context) ([]string, error) {
	out, err := n.Ctl(ctx, "list_queues", "--no-table-headers", "name")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// ErrNoConnection is wrapped by CloseConnections' error when no
// connection of that name is open (a run between two sessions of its own).
var ErrNoConnection = errors.New("no connection")

// CloseConnections closes, with reason, every connection on the node whose
// client named it name (rabbitmq's connection_name property; see
// rabbit.ConnectionName), and returns how many it closed. Unlike
// close_all_connections it leaves every other run on the node alone.
func (n *Node) CloseConnections(ctx context.Context, name, reason string) (int, error) {
	// One rabbitmqctl eval finds and closes them: each rabbitmqctl starts an
	// Erlang VM, and a list_connections then a close_connection each took
	// 19 s with the load average at 7 on 2 cores, 6 s this way at 40. The
	// fault suite holds a worker of the run while it closes, and a run
	// that stops moving for 10 s ends as stalled. A connection that closes
	// on its own meanwhile is skipped (catch), not an error.
	expr := fmt.Sprintf(`length([P || P <- rabbit_networking:connections(), `+
		`[{client_properties, Props}] <- [catch rabbit_networking:connection_info(P, [client_properties])], `+
		`lists:member({<<"connection_name">>, longstr, <<%q/utf8>>}, Props), `+
		`ok =:= (catch rabbit_networking:close_connection(P, %q))]).`, name, reason)
	// rabbitmqctl itself may fail to reach the node on a busy machine
	// (exit status 69, seen once in a CI run): the eval only closes what
	// is still open, so it is tried again, up to three times.
	var out string
	var err error
	for try := 0; try < 3; try++ {
		if out, err = n.Ctl(ctx, "eval", expr); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return 0, err
	}
	var closed int
	if _, err := fmt.Sscan(strings.TrimSpace(out), &closed); err != nil {
		return 0, fmt.Errorf("closing the connections named %q: %q", name, out)
	}
	if closed == 0 {
		return 0, fmt.Errorf("%w named %q on the node", ErrNoConnection, name)
	}
	return closed, nil
}

// Remove stops the node (rabbitmqctl stop, then SIGKILL if it lingers)
// and deletes its directories.
func (n *Node) Remove() error { return cluster.RemoveLocal(n.spec) }

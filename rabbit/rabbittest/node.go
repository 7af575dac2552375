package rabbittest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A private node is for tests that disturb a broker (close its
// connections, restart it, delete queues behind a run's back): the shared
// node on 5672 is never stopped, restarted or cut. Each private node has
// its own node name, AMQP and distribution ports, data and log directories
// and a config file whose listener names its port (the global config pins
// 5672). Measured on RabbitMQ 3.10.8 here: it starts in about 2-11 s,
// stop_app+start_app takes about 5 s, close_all_connections and stop about
// 1 s each.

// nodeStart bounds a private node's start-up; nodeCtl bounds one
// rabbitmqctl command.
const (
	nodeStart = 90 * time.Second
	nodeCtl   = 60 * time.Second
)

// Node is a private RabbitMQ node a test started. Remove it when done
// (StartNode does that in t.Cleanup).
type Node struct {
	Name string // Erlang node name, e.g. qlabfault-4242-1a2b@localhost
	URL  string // amqp://guest:guest@127.0.0.1:<Port>/
	Port int    // AMQP listener
	dir  string // data, logs, config and pid file
}

// ErrNoServer means rabbitmq-server cannot be started here: the test
// skips with it (or fails under QLAB_REQUIRE_BROKER=1).
var ErrNoServer = errors.New("cannot start a private RabbitMQ node")

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
// free ports below the ephemeral range (a probe to a port in that range
// can connect to itself and hold the port) and waits until it accepts
// AMQP connections. The error wraps ErrNoServer when rabbitmq-server is
// missing or cannot run as this user.
func NewNode(ctx context.Context, prefix string) (*Node, error) {
	server, err := serverCommand()
	if err != nil {
		return nil, err
	}
	port, err := freePortPair()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", prefix+"-node-")
	if err != nil {
		return nil, err
	}
	n := &Node{
		Name: fmt.Sprintf("%s-%d-%04x@localhost", prefix, os.Getpid(), rand.IntN(1<<16)),
		URL:  fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", port),
		Port: port,
		dir:  dir,
	}
	if err := n.prepare(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.CommandContext(ctx, server, "-detached")
	cmd.Env = append(os.Environ(), n.env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: rabbitmq-server -detached: %v: %s", ErrNoServer, err, strings.TrimSpace(string(out)))
	}
	if err := n.awaitUp(ctx); err != nil {
		n.Remove()
		return nil, err
	}
	return n, nil
}

// serverCommand finds rabbitmq-server and checks it can run as this user:
// the Debian wrapper runs it as the rabbitmq user when started by root,
// and refuses anyone else.
func serverCommand() (string, error) {
	path, err := exec.LookPath("rabbitmq-server")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/rabbitmq-server"); statErr != nil {
			return "", fmt.Errorf("%w: rabbitmq-server is not installed (Debian package rabbitmq-server)", ErrNoServer)
		}
		path = "/usr/sbin/rabbitmq-server"
	}
	if os.Geteuid() != 0 && !isUser("rabbitmq") {
		return "", fmt.Errorf("%w: rabbitmq-server runs only as root or the rabbitmq user", ErrNoServer)
	}
	return path, nil
}

func isUser(name string) bool {
	u, err := user.Current()
	return err == nil && u.Username == name
}

// freePortPair returns a port p such that p and p+1 (the distribution
// port) are free on loopback, between 20000 and 32000 and clear of 25672,
// the shared node's distribution port.
func freePortPair() (int, error) {
	for range 200 {
		p := 20000 + 2*rand.IntN(6000)
		if p == 25672 || p+1 == 25672 || !portFree(p) || !portFree(p+1) {
			continue
		}
		return p, nil
	}
	return 0, errors.New("no free port pair for a private node")
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// prepare writes the node's config and plugins files and hands its
// directories to the rabbitmq user when running as root.
func (n *Node) prepare() error {
	files := map[string]string{
		"rabbitmq.conf":   fmt.Sprintf("listeners.tcp.default = 127.0.0.1:%d\n", n.Port),
		"enabled_plugins": "[].\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(n.dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, sub := range []string{"mnesia", "log"} {
		if err := os.Mkdir(filepath.Join(n.dir, sub), 0o755); err != nil {
			return err
		}
	}
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("rabbitmq")
	if err != nil {
		return fmt.Errorf("%w: no rabbitmq user to run the node as: %v", ErrNoServer, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(n.dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, uid, gid)
	})
}

// env is the environment that makes rabbitmq-server start this node and
// no other.
func (n *Node) env() []string {
	return []string{
		"RABBITMQ_NODENAME=" + n.Name,
		"RABBITMQ_NODE_PORT=" + strconv.Itoa(n.Port),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(n.Port+1),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(n.dir, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(n.dir, "log"),
		"RABBITMQ_PID_FILE=" + n.pidFile(),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(n.dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(n.dir, "rabbitmq.conf"),
	}
}

func (n *Node) pidFile() string { return filepath.Join(n.dir, "node.pid") }

// awaitUp waits, within ctx, until the node accepts an AMQP connection.
func (n *Node) awaitUp(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if conn, err := amqp.Dial(n.URL); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("private node %s did not accept connections on port %d: %w; its log: %s",
				n.Name, n.Port, ctx.Err(), n.logTail())
		case <-tick.C:
		}
	}
}

// AwaitUp waits, within ctx, until the node accepts AMQP connections
// again (after Ctl("start_app")).
func (n *Node) AwaitUp(ctx context.Context) error { return n.awaitUp(ctx) }

// logTail is the end of the node's log, for an error message.
func (n *Node) logTail() string {
	b, err := os.ReadFile(filepath.Join(n.dir, "log", n.Name+".log"))
	if err != nil {
		return "(no log)"
	}
	if len(b) > 800 {
		b = b[len(b)-800:]
	}
	return string(b)
}

// Ctl runs rabbitmqctl -n <node> args within ctx and nodeCtl, and returns
// its standard output. As root the Debian wrapper runs it as the rabbitmq
// user, whose Erlang cookie the node shares.
func (n *Node) Ctl(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeCtl)
	defer cancel()
	cmd := exec.CommandContext(ctx, "rabbitmqctl", append([]string{"-q", "-n", n.Name}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("rabbitmqctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Queues lists the names of the queues on the node.
func (n *Node) Queues(ctx context.Context) ([]string, error) {
	out, err := n.Ctl(ctx, "list_queues", "--no-table-headers", "name")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// CloseConnections closes, with reason, every connection on the node whose
// client named it name (rabbitmq's connection_name property; see
// rabbit.ConnectionName), and returns how many it closed. Unlike
// close_all_connections it leaves every other run on the node alone.
func (n *Node) CloseConnections(ctx context.Context, name, reason string) (int, error) {
	// The table form: rabbitmqctl's JSON spells a pid #PID<0.1.0>, which
	// close_connection does not accept; the table's <rabbit@host.1.2.0> it does.
	out, err := n.Ctl(ctx, "list_connections", "--no-table-headers", "pid", "client_properties")
	if err != nil {
		return 0, err
	}
	named := fmt.Sprintf(`{"connection_name","%s"}`, name)
	// One rabbitmqctl per connection, all at once: each takes a second or
	// more to start, and the connections should drop together.
	var pids []string
	for _, line := range strings.Split(out, "\n") {
		if pid, props, ok := strings.Cut(line, "\t"); ok && strings.Contains(props, named) {
			pids = append(pids, pid)
		}
	}
	errs := make([]error, len(pids))
	var wg sync.WaitGroup
	for i, pid := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = n.Ctl(ctx, "close_connection", pid, reason)
		}()
	}
	wg.Wait()
	closed := 0
	var first error // a connection may close on its own between the list and the close
	for _, err := range errs {
		if err == nil {
			closed++
		}
		first = cmp.Or(first, err)
	}
	if closed == 0 {
		return 0, cmp.Or(first, fmt.Errorf("no connection named %q on the node: %q", name, out))
	}
	return closed, nil
}

// Remove stops the node (rabbitmqctl stop, then SIGKILL of the pid it
// wrote if it is still there) and deletes its directories.
func (n *Node) Remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, stopErr := n.Ctl(ctx, "stop")
	if pid := n.pid(); pid > 0 && syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		stopErr = nil // stopped, if not politely
	}
	if err := os.RemoveAll(n.dir); err != nil {
		return err
	}
	return stopErr
}

// pid is the node's OS process id from its pid file, or 0.
func (n *Node) pid() int {
	b, err := os.ReadFile(n.pidFile())
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

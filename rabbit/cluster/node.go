package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A local node is one rabbitmq-server beside the shared one on 5672, with
// everything that could collide made its own: the Erlang node name, the
// AMQP, distribution, management and Prometheus ports, the data and log
// directories, the enabled-plugins file, and a config file (the global one
// pins its listener to 5672). The Erlang cookie is the rabbitmq user's:
// as root, the Debian wrappers run both rabbitmq-server and rabbitmqctl as
// that user, so every node and every rabbitmqctl shares it.

// Bounds on the waits a node involves. Measured on RabbitMQ 3.10.8 with two
// busy cores: a node with the management plugin starts in 5-20 s,
// stop_app+start_app takes about 5 s, one rabbitmqctl 1-3 s. They guard
// against a hang, not slowness: at load 27 (make test beside two busy
// cores, 2026-11-27) one rabbitmqctl stop_app in the 4.3 chroot ran
// past 60 s, and its cluster never started.
const (
	NodeStartTimeout = 120 * time.Second // one node, from exec to AMQP
	CtlTimeout       = 2 * time.Minute   // one rabbitmqctl command
	stopTimeout      = 30 * time.Second  // a polite stop before SIGKILL
)

// ErrNoServer means rabbitmq-server cannot be started here (not
// installed, or not runnable as this user).
var ErrNoServer = errors.New("cannot start a local RabbitMQ node")

// NodeSpec is one node's name, ports and directory: everything needed to
// start it, reach it, and remove it later from another process.
type NodeSpec struct {
	Short     string `json:"short"`               // n1, n2, n3
	Name      string `json:"name"`                // Erlang node name, e.g. qlab-4242-1a2b-n1@localhost
	Port      int    `json:"port"`                // AMQP listener on 127.0.0.1
	DistPort  int    `json:"dist_port,omitempty"` // Erlang distribution (local nodes)
	MgmtPort  int    `json:"mgmt_port"`           // management UI and HTTP API
	PromPort  int    `json:"prom_port"`           // rabbitmq_prometheus /metrics
	Dir       string `json:"dir,omitempty"`       // config, data, logs, pid file (local nodes)
	Root      string `json:"root,omitempty"`      // the chroot a local node runs in, "" for none
	Container string `json:"container,omitempty"` // container name (Docker nodes)
	// Seed, for a local node, is the running node it joins when it first
	// boots (classic_config peer discovery), "" for none.
	Seed string `json:"seed,omitempty"`
}

// URL is the node's AMQP URL (guest/guest, loopback only).
func (n NodeSpec) URL() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.Port) }

// ManagementURL is the node's management UI; "" for a lean node
// (Options.Lean), which has none.
func (n NodeSpec) ManagementURL() string {
	if n.MgmtPort == 0 {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d/", n.MgmtPort)
}

// MetricsURL is the node's rabbitmq_prometheus endpoint.
func (n NodeSpec) MetricsURL() string { return fmt.Sprintf("http://127.0.0.1:%d/metrics", n.PromPort) }

// sbinServer is where the Debian package puts rabbitmq-server, outside a
// user's PATH.
var sbinServer = "/usr/sbin/rabbitmq-server"

// ServerCommand finds rabbitmq-server and checks it can run as this user:
// the Debian wrapper runs it as the rabbitmq user when started by root and
// refuses anyone else. The error wraps ErrNoServer.
func ServerCommand() (string, error) {
	path, err := exec.LookPath("rabbitmq-server")
	if err != nil {
		if _, statErr := os.Stat(sbinServer); statErr != nil {
			return "", fmt.Errorf("%w: rabbitmq-server is not installed (Debian package rabbitmq-server)", ErrNoServer)
		}
		path = sbinServer
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

// Config is the node's rabbitmq.conf: every listener on loopback and on
// the node's own ports.
func (n NodeSpec) Config() string {
	var b strings.Builder
	fmt.Fprintf(&b, "listeners.tcp.default = 127.0.0.1:%d\n", n.Port)
	if n.MgmtPort > 0 {
		fmt.Fprintf(&b, "management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %d\n", n.MgmtPort)
	}
	if n.PromPort > 0 {
		fmt.Fprintf(&b, "prometheus.tcp.ip = 127.0.0.1\nprometheus.tcp.port = %d\n", n.PromPort)
	}
	if n.Seed != "" {
		fmt.Fprintf(&b, "cluster_formation.peer_discovery_backend = classic_config\n"+
			"cluster_formation.classic_config.nodes.1 = %s\n", n.Seed)
	}
	return b.String()
}

// plugins is the node's enabled_plugins file: the management plugin
// where it has a port for its UI, rabbitmq_prometheus where it has one
// for its metrics.
func (n NodeSpec) plugins() string {
	var on []string
	if n.MgmtPort > 0 {
		on = append(on, "rabbitmq_management")
	}
	if n.PromPort > 0 {
		on = append(on, "rabbitmq_prometheus")
	}
	return "[" + strings.Join(on, ",") + "].\n"
}

// prepare writes the node's config and plugins files and, as root, hands
// its directory to the rabbitmq user the node runs as.
func (n NodeSpec) prepare() error {
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{"rabbitmq.conf": n.Config(), "enabled_plugins": n.plugins()}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, sub := range []string{"mnesia", "log"} {
		if err := os.Mkdir(filepath.Join(n.Dir, sub), 0o755); err != nil {
			return err
		}
	}
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid, err := n.user()
	if err != nil {
		return err
	}
	return filepath.Walk(n.Dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, uid, gid)
	})
}

// user is the uid and gid the node runs as: the rabbitmq user of the
// machine, or of the node's chroot.
func (n NodeSpec) user() (uid, gid int, err error) {
	if n.Root != "" {
		return rootUser(n.Root)
	}
	u, err := user.Lookup("rabbitmq")
	if err != nil {
		return 0, 0, fmt.Errorf("%w: no rabbitmq user to run the node as: %v", ErrNoServer, err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// env makes rabbitmq-server start this node and no other. Its paths are
// as the node sees them (inside its chroot, when it has one).
func (n NodeSpec) env() []string {
	dir := inRoot(n.Root, n.Dir)
	return []string{
		"RABBITMQ_NODENAME=" + n.Name,
		"RABBITMQ_NODE_PORT=" + strconv.Itoa(n.Port),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(n.DistPort),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(dir, "log"),
		"RABBITMQ_PID_FILE=" + filepath.Join(dir, "node.pid"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(dir, "rabbitmq.conf"),
	}
}

// serverCommand is rabbitmq-server -detached for this node: the machine's
// server, or the one inside the node's chroot.
func (n NodeSpec) serverCommand(ctx context.Context, server string) (*exec.Cmd, error) {
	if n.Root == "" {
		cmd := exec.CommandContext(ctx, server, "-detached")
		cmd.Env = append(os.Environ(), n.env()...)
		return cmd, nil
	}
	if err := mountProc(n.Root); err != nil {
		return nil, err
	}
	return rootCommand(ctx, n.Root, n.env(), server, "-detached"), nil
}

// StartLocal writes the node's files under n.Dir, starts rabbitmq-server
// detached, and waits within ctx and NodeStartTimeout until the node
// accepts AMQP connections. On failure it removes what it started.
func StartLocal(ctx context.Context, server string, n NodeSpec) error {
	ctx, cancel := context.WithTimeout(ctx, NodeStartTimeout)
	defer cancel()
	if err := n.prepare(); err != nil {
		os.RemoveAll(n.Dir)
		return err
	}
	cmd, err := n.serverCommand(ctx, server)
	if err != nil {
		os.RemoveAll(n.Dir)
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(n.Dir)
		return fmt.Errorf("%w: rabbitmq-server -detached: %v: %s", ErrNoServer, err, strings.TrimSpace(string(out)))
	}
	if err := AwaitAMQP(ctx, n.Port); err != nil {
		RemoveLocal(n)
		return fmt.Errorf("node %s did not accept connections on port %d: %w; its log: %s",
			n.Name, n.Port, err, n.LogTail())
	}
	return nil
}

// AwaitAMQP waits, within ctx, until something on 127.0.0.1:port answers
// an AMQP protocol header with a connection.start frame: a listening port
// alone is not a broker ready for clients.
func AwaitAMQP(ctx context.Context, port int) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if amqpAnswers(ctx, port) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// amqpAnswers sends the AMQP 0-9-1 header and reads the first frame's type
// byte (1, a method frame: connection.start).
func amqpAnswers(ctx context.Context, port int) bool {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte("AMQP\x00\x00\x09\x01")); err != nil {
		return false
	}
	frame := make([]byte, 1)
	_, err = conn.Read(frame)
	return err == nil && frame[0] == 1
}

// LogTail is the end of a local node's log, for an error message.
func (n NodeSpec) LogTail() string {
	b, err := os.ReadFile(filepath.Join(n.Dir, "log", n.Name+".log"))
	if err != nil {
		return "(no log)"
	}
	if len(b) > 800 {
		b = b[len(b)-800:]
	}
	return string(b)
}

// Ctl runs rabbitmqctl -q -n <node> args within ctx and CtlTimeout and
// returns its standard output. As root the Debian wrapper runs it as the
// rabbitmq user, whose Erlang cookie the node shares.
func Ctl(ctx context.Context, node string, args ...string) (string, error) {
	return runTool(ctx, "", "rabbitmqctl", node, args...)
}

// CtlIn is Ctl for a node that runs inside chroot root ("" for none): the
// rabbitmqctl inside it, with its Erlang cookie.
func CtlIn(ctx context.Context, root, node string, args ...string) (string, error) {
	return runTool(ctx, root, "rabbitmqctl", node, args...)
}

// ctlErlArgs gives the CLI tools' Erlang VM the node's own scheduler
// setting: no busy waiting. The CLI spins by default, and on a loaded
// machine its spinning threads take the time its working one needs: with
// ten CPU hogs on two cores, rabbitmqctl version (4.3.6, no node asked)
// took 39-45 s, and 11-13 s with it (1 s of CPU either way).
const ctlErlArgs = "RABBITMQ_CTL_ERL_ARGS=+sbwt none +sbwtdcpu none +sbwtdio none"

// CtlEnv is this process's environment for a broker CLI tool run on this
// machine: with ctlErlArgs, unless RABBITMQ_CTL_ERL_ARGS is already set.
func CtlEnv() []string {
	if _, set := os.LookupEnv("RABBITMQ_CTL_ERL_ARGS"); set {
		return os.Environ()
	}
	return append(os.Environ(), ctlErlArgs)
}

// runTool runs one of the broker's CLI tools against node, inside chroot
// root when root is not "", its VM set as CtlEnv says (in a chroot,
// whose environment starts empty, always with ctlErlArgs).
func runTool(ctx context.Context, root, tool, node string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, CtlTimeout)
	defer cancel()
	argv := append([]string{"-q", "-n", node}, args...)
	cmd := exec.CommandContext(ctx, tool, argv...)
	cmd.Env = CtlEnv()
	if root != "" {
		cmd = rootCommand(ctx, root, []string{ctlErlArgs}, append([]string{tool}, argv...)...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s on %s: %v: %s", tool, strings.Join(args, " "), node, err,
			firstLine(stderr.String()))
	}
	return string(out), nil
}

// firstLine is the first non-blank line of a tool's error output: the
// broker's CLI follows it with a page of diagnostics.
func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return "(no error output)"
}

// RemoveLocal stops the node (rabbitmqctl stop, then SIGKILL if its
// process is still there after a while) and deletes its directory. It
// kills every beam that still names the node, not only the first one it
// found: on a loaded machine a second one (a start in flight) was once
// still there when the first had gone.
func RemoveLocal(n NodeSpec) error {
	var stopErr error
	if pid := n.Pid(); pid > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		_, stopErr = CtlIn(ctx, n.Root, n.Name, "stop")
		cancel()
		awaitGone(pid, n.Name, 10*time.Second)
	}
	for range 3 {
		pid := n.Pid()
		if pid == 0 {
			break
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		awaitGone(pid, n.Name, 10*time.Second)
	}
	if err := os.RemoveAll(n.Dir); err != nil {
		return err
	}
	if pid := n.Pid(); pid > 0 {
		return fmt.Errorf("node %s is still running (pid %d, %s): stop: %v",
			n.Name, pid, procState(pid), stopErr)
	}
	return nil
}

// procState is the state field of /proc/PID/stat ("R", "S", "D", ...),
// for an error that must say why a process outlived its kill.
func procState(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 || i+2 >= len(stat) {
		return "state unknown"
	}
	return "state " + string(stat[i+2])
}

// Pid is the node's beam.smp process (the one whose environment names the
// node in RABBITMQ_NODENAME: RabbitMQ 3.10 keeps the node name out of its
// command line), or 0 when it has none.
func (n NodeSpec) Pid() int {
	want := []byte("RABBITMQ_NODENAME=" + n.Name + "\x00")
	for _, pid := range processes() {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if !bytes.HasPrefix(comm, []byte("beam")) {
			continue
		}
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && bytes.Contains(env, want) && alive(pid) {
			return pid
		}
	}
	return 0
}

// processes lists the ids of the machine's processes.
func processes() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processNames reports whether process pid is alive and names s in its
// command line or environment.
func processNames(pid int, s string) bool {
	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
		if err == nil && bytes.Contains(b, []byte(s)) {
			return alive(pid)
		}
	}
	return false
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !isZombie(stat)
}

// isZombie reads the state field of /proc/PID/stat ("pid (comm) S ...").
func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// awaitGone waits up to d for process pid to be gone (or to be another
// process), and reports whether it is.
func awaitGone(pid int, name string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !processNames(pid, name) {
			return true
		}
	}
	return !processNames(pid, name)
}

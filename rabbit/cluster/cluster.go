package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kinds of cluster: nodes run as local processes or as Docker containers.
const (
	Local  = "local"
	Docker = "docker"
)

// ErrUnavailable means neither local RabbitMQ binaries nor a Docker engine
// can run a cluster here.
var ErrUnavailable = errors.New("a cluster needs rabbitmq-server (Debian package rabbitmq-server) or a Docker engine; neither is available here")

// ErrUnknownNode means a node name is not one of the cluster's.
var ErrUnknownNode = errors.New("no such node in the cluster")

// Options configure Up. The zero value starts three local nodes (or
// containers where no rabbitmq-server is installed) and keeps no state file.
type Options struct {
	// Nodes is the cluster's size; 0 means 3.
	Nodes int
	// Prefix starts every node name and directory; "" means "qlab".
	Prefix string
	// StateFile, when set, is where Up records what it started, before it
	// starts anything, so that Load and Down can remove it from another
	// process or after a crash. DefaultStateFile is the CLI's.
	StateFile string
	// Progress receives one line per step (node starting, node up, node
	// joined); nil discards them.
	Progress io.Writer
	// NoDocker keeps Up from falling back to Docker containers where no
	// rabbitmq-server can run.
	NoDocker bool
	// Root, when set, runs the nodes as local processes inside this chroot
	// (scripts/rabbitmq.sh build 4.3 makes one) instead of the machine's
	// rabbitmq-server; never Docker.
	Root string
	// Owner is the pid every node name carries (<prefix>-<pid>-<rand>);
	// 0 means this process. ReapOrphans removes a node of a test prefix
	// whose owner is gone, and WatchProcess removes it when its owner
	// ends: make test names its recipe's shell, so the one cluster it
	// starts for every package goes with it however it ends.
	Owner int
	// Lean starts local nodes without the management plugin (no UI:
	// every ManagementURL is empty; a Docker node keeps its image's),
	// which a node loads and starts in seconds of CPU. The test clusters
	// run lean: nobody reads their UI, and they start while make test is
	// at its busiest.
	Lean bool
}

// Cluster is a running cluster Up started (or Load found recorded). Its
// methods are safe for one goroutine at a time.
type Cluster struct {
	state
	file     string     // the state file, "" if none
	progress io.Writer  // never nil
	sayMu    sync.Mutex // nodes start at once; their lines must not mix
	drv      driver
}

// state is what Up records: enough to reach and remove every node later.
type state struct {
	Kind    string     `json:"kind"`
	ID      string     `json:"id"`
	Dir     string     `json:"dir,omitempty"`     // local: every node's directory is under it
	Root    string     `json:"root,omitempty"`    // local: the chroot the nodes run in, "" for none
	Network string     `json:"network,omitempty"` // docker: the nodes' network
	Cookie  string     `json:"cookie,omitempty"`  // docker: the nodes' Erlang cookie
	Nodes   []NodeSpec `json:"nodes"`
	Started time.Time  `json:"started"`
}

// driver runs the nodes of one kind of cluster.
type driver interface {
	// start starts the nodes (all at once where it can), joined to the
	// first, and returns when each accepts AMQP connections.
	start(ctx context.Context, c *Cluster) error
	// ctl runs rabbitmqctl args against node n.
	ctl(ctx context.Context, n NodeSpec, args ...string) (string, error)
	// alive reports whether n's process or container runs (its app may be
	// stopped).
	alive(ctx context.Context, n NodeSpec) bool
	// remove stops n and deletes everything it left; removing what is
	// already gone is not an error.
	remove(ctx context.Context, n NodeSpec) error
	// cleanup deletes what the cluster shares (directory, network).
	cleanup(ctx context.Context, c *Cluster) error
	// leftovers lists what of the cluster still exists (processes,
	// directories, containers, network).
	leftovers(ctx context.Context, c *Cluster) []string
}

// Up starts a cluster of opts.Nodes nodes, joined to the first (as they
// boot, or with rabbitmqctl join_cluster in Docker), and returns once every
// node accepts AMQP
// connections and the first reports them all running. It uses local
// rabbitmq-server binaries when they can run, else Docker containers; with
// neither the error wraps ErrUnavailable. On failure it removes what it
// started. ctx bounds the whole start.
func Up(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Nodes < 0 {
		return nil, fmt.Errorf("a cluster of %d nodes", opts.Nodes)
	}
	c := &Cluster{file: opts.StateFile, progress: cmp.Or[io.Writer](opts.Progress, io.Discard)}
	c.Nodes = make([]NodeSpec, cmp.Or(opts.Nodes, 3))
	c.ID = fmt.Sprintf("%s-%d-%04x", cmp.Or(opts.Prefix, "qlab"), cmp.Or(opts.Owner, os.Getpid()), rand.IntN(1<<16))
	c.Root = opts.Root
	if err := c.pickDriver(ctx, opts.NoDocker); err != nil {
		return nil, err
	}
	begin := time.Now()
	c.Started = begin.UTC()
	if err := c.plan(opts.Lean); err != nil {
		return nil, err
	}
	if err := c.save(); err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.say("starting failed, removing what was started: %v", err)
		return nil, errors.Join(err, c.Down(context.WithoutCancel(ctx)))
	}
	c.say("cluster up in %.1fs: %s", time.Since(begin).Seconds(), strings.Join(c.Names(), ", "))
	return c, nil
}

// pickDriver runs the nodes as local processes where rabbitmq-server can
// run, else as containers where a Docker engine answers.
func (c *Cluster) pickDriver(ctx context.Context, noDocker bool) error {
	if c.Root != "" {
		server, err := RootServerCommand(c.Root)
		if err != nil {
			return fmt.Errorf("%w (%v)", ErrUnavailable, err)
		}
		c.Kind, c.drv = Local, &localDriver{server: server}
		return nil
	}
	server, localErr := ServerCommand()
	switch {
	case localErr == nil:
		c.Kind, c.drv = Local, &localDriver{server: server}
		return nil
	case noDocker:
		return fmt.Errorf("%w (%v)", ErrUnavailable, localErr)
	}
	c.Cookie = newCookie()
	d, err := newDockerDriver(ctx, c.Cookie)
	if err != nil {
		return fmt.Errorf("%w (%v; %v)", ErrUnavailable, localErr, err)
	}
	c.Kind, c.drv = Docker, d
	return nil
}

// plan names the nodes and picks their ports and directories; a lean
// node gets no management port (Options.Lean).
func (c *Cluster) plan(lean bool) error {
	ports, err := FreePorts(4 * len(c.Nodes))
	if err != nil {
		return err
	}
	if c.Kind == Local {
		c.Dir = filepath.Join(os.TempDir(), c.ID)
		if c.Root != "" {
			c.Dir = filepath.Join(c.Root, "tmp", c.ID) // where the nodes inside can reach it
		}
	}
	for i := range c.Nodes {
		p := ports[4*i:]
		n := NodeSpec{Short: fmt.Sprintf("n%d", i+1), Port: p[0], MgmtPort: p[2], PromPort: p[3]}
		if lean {
			n.MgmtPort = 0
		}
		switch c.Kind {
		case Local:
			n.Name = fmt.Sprintf("%s-%s@localhost", c.ID, n.Short)
			n.DistPort = p[1]
			n.Dir = filepath.Join(c.Dir, n.Short)
			n.Root = c.Root
			if i > 0 {
				n.Seed = c.Nodes[0].Name
			}
		case Docker:
			n.Name = "rabbit@" + n.Short
			n.Container = c.ID + "-" + n.Short
		}
		c.Nodes[i] = n
	}
	if c.Kind == Docker {
		c.Network = c.ID
	}
	return nil
}

// start starts every node, joined to the first, and checks that the
// first reports them all running.
func (c *Cluster) start(ctx context.Context) error {
	if err := c.drv.start(ctx, c); err != nil {
		return err
	}
	first := c.Nodes[0]
	running, err := c.runningNodes(ctx, first)
	if err != nil {
		return err
	}
	if len(running) != len(c.Nodes) {
		return fmt.Errorf("after joining, %s reports %d running nodes, want %d: %s",
			first.Short, len(running), len(c.Nodes), strings.Join(running, ", "))
	}
	return nil
}

// joinWithCtl joins every node but the first to it with rabbitmqctl
// (stop_app, join_cluster, start_app): for nodes that booted on their
// own (Docker's).
func (c *Cluster) joinWithCtl(ctx context.Context) error {
	first := c.Nodes[0]
	for _, n := range c.Nodes[1:] {
		begin := time.Now()
		c.say("%s: joining %s", n.Short, first.Name)
		// await_startup first: a node accepts AMQP before its plugins
		// have started, and stop_app waits for them within its own bound.
		for _, args := range [][]string{{"await_startup"}, {"stop_app"}, {"join_cluster", first.Name}, {"start_app"}} {
			what := fmt.Sprintf("%s: rabbitmqctl %s", n.Short, strings.Join(args, " "))
			if err := c.waiting(what, func() error { _, err := c.drv.ctl(ctx, n, args...); return err }); err != nil {
				return err
			}
		}
		what := fmt.Sprintf("%s: AMQP on port %d after start_app", n.Short, n.Port)
		if err := c.waiting(what, func() error { return c.awaitNode(ctx, n) }); err != nil {
			return err
		}
		c.say("%s: joined in %.1fs", n.Short, time.Since(begin).Seconds())
	}
	return nil
}

// startAll runs start for every node of nodes at once and reports each
// on progress; the first error wins.
func (c *Cluster) startAll(ctx context.Context, nodes []NodeSpec, start func(context.Context, NodeSpec) error) error {
	errs := make([]error, len(nodes))
	var mu sync.Mutex
	pending := map[string]bool{}
	for _, n := range nodes {
		pending[n.Short] = true
	}
	what := func() string { // the nodes still starting, for waiting's line
		mu.Lock()
		defer mu.Unlock()
		var left []string
		for _, n := range nodes {
			if pending[n.Short] {
				left = append(left, n.Short)
			}
		}
		return strings.Join(left, ", ") + " to boot and accept AMQP"
	}
	return c.waitingFor(what, func() error {
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Go(func() {
				begin := time.Now()
				joins := ""
				if n.Seed != "" {
					joins = ", joining " + n.Seed + " as it boots"
				}
				c.say("%s: starting %s (AMQP port %d)%s", n.Short, n.Name, n.Port, joins)
				if errs[i] = start(ctx, n); errs[i] == nil {
					c.say("%s: up in %.1fs", n.Short, time.Since(begin).Seconds())
				}
				mu.Lock()
				delete(pending, n.Short)
				mu.Unlock()
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}

// runningNodes asks node n which nodes of its cluster are running.
func (c *Cluster) runningNodes(ctx context.Context, n NodeSpec) ([]string, error) {
	out, err := c.drv.ctl(ctx, n, "cluster_status", "--formatter", "json")
	if err != nil {
		return nil, err
	}
	var st struct {
		Running []string `json:"running_nodes"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return nil, fmt.Errorf("reading cluster_status of %s: %v", n.Short, err)
	}
	return st.Running, nil
}

// awaitNode waits within ctx and NodeStartTimeout until n accepts AMQP.
func (c *Cluster) awaitNode(ctx context.Context, n NodeSpec) error {
	ctx, cancel := context.WithTimeout(ctx, NodeStartTimeout)
	defer cancel()
	if err := AwaitAMQP(ctx, n.Port); err != nil {
		return fmt.Errorf("%s did not accept AMQP connections on port %d: %w", n.Short, n.Port, err)
	}
	return nil
}

// waitingEvery is how often waiting says that a step is still going.
const waitingEvery = 5 * time.Second

// waiting runs step, saying what it waits for once it has taken
// waitingEvery and again every waitingEvery: each rabbitmqctl starts an
// Erlang VM, and on a loaded laptop a join was silent for 40 s.
func (c *Cluster) waiting(what string, step func() error) error {
	return c.waitingFor(func() string { return what }, step)
}

// waitingFor is waiting with what asked anew each time it is said.
func (c *Cluster) waitingFor(what func() string, step func() error) error {
	done := make(chan error, 1)
	begin := time.Now()
	go func() { done <- step() }()
	tick := time.NewTicker(waitingEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			c.say("  … still waiting for %s (%.0fs)", what(), time.Since(begin).Seconds())
		}
	}
}

func (c *Cluster) say(format string, args ...any) {
	c.sayMu.Lock()
	defer c.sayMu.Unlock()
	fmt.Fprintf(c.progress, format+"\n", args...)
}

// Names are the nodes' Erlang node names, in node order.
func (c *Cluster) Names() []string {
	names := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		names[i] = n.Name
	}
	return names
}

// URLs are the nodes' AMQP URLs, in node order.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return urls
}

// URLList is URLs joined with commas, the form RABBITMQ_URL takes for a
// cluster.
func (c *Cluster) URLList() string { return strings.Join(c.URLs(), ",") }

// Node finds a node by its short name (n1) or its full Erlang name.
func (c *Cluster) Node(name string) (NodeSpec, error) {
	for _, n := range c.Nodes {
		if name == n.Short || name == n.Name {
			return n, nil
		}
	}
	return NodeSpec{}, fmt.Errorf("%w: %q (the nodes are %s)", ErrUnknownNode, name, strings.Join(c.shorts(), ", "))
}

func (c *Cluster) shorts() []string {
	s := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		s[i] = n.Short
	}
	return s
}

// Kill stops the RabbitMQ application on one node (rabbitmqctl stop_app):
// its connections drop and its quorum queue members go away, as if it
// had died, while its process stays for Revive.
func (c *Cluster) Kill(ctx context.Context, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	_, err = c.drv.ctl(ctx, n, "stop_app")
	return err
}

// Revive starts a killed node's application again and waits, within ctx
// and NodeStartTimeout, until it accepts AMQP connections.
func (c *Cluster) Revive(ctx context.Context, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if c.State(ctx, n) == Gone {
		return fmt.Errorf("%s is gone, not stopped: its process exited, so start_app cannot reach it; "+
			"remove the cluster and start a new one", n.Short)
	}
	if _, err := c.drv.ctl(ctx, n, "start_app"); err != nil {
		return err
	}
	return c.awaitNode(ctx, n)
}

// Down stops and removes every node Up started, what they share, and the
// state file. Calling it again, or on a cluster that is half gone, removes
// what is left and is not an error.
func (c *Cluster) Down(ctx context.Context) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		wg.Go(func() { errs[i] = c.drv.remove(ctx, n) })
	}
	wg.Wait()
	errs = append(errs, c.drv.cleanup(ctx, c))
	if err := errors.Join(errs...); err != nil {
		return err // keep the state file: down can be tried again
	}
	if c.file != "" {
		if err := os.Remove(c.file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Leftovers lists what of the cluster is still there: a process, a
// directory, a container, or a port of a node that something listens on.
// After Down it is empty.
func (c *Cluster) Leftovers(ctx context.Context) []string {
	left := c.drv.leftovers(ctx, c)
	for _, n := range c.Nodes {
		for _, p := range []int{n.Port, n.DistPort, n.MgmtPort, n.PromPort} {
			if p != 0 && !PortFree(p) {
				left = append(left, fmt.Sprintf("%s's port %d is in use", n.Short, p))
			}
		}
	}
	if c.file != "" {
		if _, err := os.Stat(c.file); err == nil {
			left = append(left, "state file "+c.file)
		}
	}
	return left
}

// NodeState is how a node is doing.
type NodeState string

// The states of a node.
const (
	Running NodeState = "running" // accepts AMQP connections
	Stopped NodeState = "stopped" // its process runs, its app does not (killed)
	Gone    NodeState = "down"    // no process
)

// State reports whether node n accepts AMQP connections, runs with its
// application stopped, or is gone.
func (c *Cluster) State(ctx context.Context, n NodeSpec) NodeState {
	switch {
	case amqpAnswers(ctx, n.Port):
		return Running
	case c.drv.alive(ctx, n):
		return Stopped
	}
	return Gone
}

// anyRunning is the first node that accepts AMQP connections.
func (c *Cluster) anyRunning(ctx context.Context) (NodeSpec, error) {
	for _, n := range c.Nodes {
		if amqpAnswers(ctx, n.Port) {
			return n, nil
		}
	}
	return NodeSpec{}, errors.New("no node of the cluster is running")
}

// Queue is a queue as the cluster reports it. Leader, Members and Online
// (the members whose node runs) are Erlang node names, set for quorum
// queues only. Messages counts every message the queue holds: Ready,
// Unacked, and on a quorum queue with at-least-once dead-lettering the
// dead letters it keeps until a target confirms them.
type Queue struct {
	Name    string
	Type    string
	Leader  string
	Members []string
	Online  []string

	Messages, Ready, Unacked int
}

// Queues lists the queues of the default vhost, asked of a running node
// (rabbitmqctl list_queues name type leader members online messages …).
func (c *Cluster) Queues(ctx context.Context) ([]Queue, error) {
	n, err := c.anyRunning(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.drv.ctl(ctx, n, "list_queues", "--formatter", "json", "name", "type", "leader", "members", "online",
		"messages", "messages_ready", "messages_unacknowledged")
	if err != nil {
		return nil, err
	}
	return parseQueues(out)
}

// parseQueues reads list_queues' JSON; a classic queue's leader and
// members come as "" or are missing.
func parseQueues(out string) ([]Queue, error) {
	var raw []struct {
		Name    string          `json:"name"`
		Type    string          `json:"type"`
		Leader  json.RawMessage `json:"leader"`
		Members json.RawMessage `json:"members"`
		Online  json.RawMessage `json:"online"`

		Messages int `json:"messages"`
		Ready    int `json:"messages_ready"`
		Unacked  int `json:"messages_unacknowledged"`
	}
	if err := json.Unmarshal([]byte(cmp.Or(strings.TrimSpace(out), "[]")), &raw); err != nil {
		return nil, fmt.Errorf("reading list_queues: %v: %q", err, out)
	}
	qs := make([]Queue, len(raw))
	for i, r := range raw {
		qs[i] = Queue{Name: r.Name, Type: r.Type, Messages: r.Messages, Ready: r.Ready, Unacked: r.Unacked}
		_ = json.Unmarshal(r.Leader, &qs[i].Leader)   // "" for a classic queue
		_ = json.Unmarshal(r.Members, &qs[i].Members) // "" for a classic queue
		_ = json.Unmarshal(r.Online, &qs[i].Online)
		slices.Sort(qs[i].Members)
		slices.Sort(qs[i].Online)
	}
	slices.SortFunc(qs, func(a, b Queue) int { return strings.Compare(a.Name, b.Name) })
	return qs, nil
}

// leaderWait bounds AwaitLeader: each ask is a rabbitmqctl, seconds on a
// busy machine.
const leaderWait = 30 * time.Second

// AwaitLeader is Leader asked again, every 250 ms within leaderWait,
// until a running node lists queue with its leader: just after a
// declare, or a node's stop, the listing can miss it for a while on a
// busy machine (Q21 on a new 4.3 cluster, and the fault suite's leader
// case after stop_app on 3.10.8, each saw "no queue named …" once). It
// returns the last ask's error when leaderWait or ctx ends first.
func (c *Cluster) AwaitLeader(ctx context.Context, queue string) (NodeSpec, error) {
	deadline := time.Now().Add(leaderWait)
	for {
		n, err := c.Leader(ctx, queue)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return n, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Leader is the node that leads quorum queue name, as a running node of
// the cluster reports it now.
func (c *Cluster) Leader(ctx context.Context, queue string) (NodeSpec, error) {
	qs, err := c.Queues(ctx)
	if err != nil {
		return NodeSpec{}, err
	}
	for _, q := range qs {
		if q.Name != queue {
			continue
		}
		if q.Leader == "" {
			return NodeSpec{}, fmt.Errorf("queue %s (%s) has no leader: is it a quorum queue?", queue, q.Type)
		}
		return c.Node(q.Leader)
	}
	return NodeSpec{}, fmt.Errorf("no queue named %s on the cluster", queue)
}

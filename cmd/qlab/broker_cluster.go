package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/cluster"
)

const clusterHelp = `Usage: qlab broker cluster up|down|status|kill NODE|revive NODE [flags]

  up           start a three-node RabbitMQ cluster on this machine (local
               rabbitmq-server nodes, or Docker containers where no
               rabbitmq-server can run), print its AMQP URLs (a list for
               RABBITMQ_URL), management UI and /metrics addresses;
               --version 4.3 runs them in the RabbitMQ 4.3 chroot
               scripts/rabbitmq.sh builds
  down         stop and remove everything up started; safe to repeat, and
               after a crash
  status       the nodes, which are running, each quorum queue's leader and
               members
  kill NODE    stop the RabbitMQ application on NODE (n1, n2, n3 or its full
               name), as if it died: its quorum queue members go; kill
               waits up to 30 s for each queue it led to elect a new
               leader, and names it
  revive NODE  start it again

The cluster is recorded in $XDG_CACHE_HOME/qlab/cluster.json (~/.cache/qlab),
or in --state FILE. It never touches the broker on 127.0.0.1:5672 or any node
it did not start. up --owner PID ties the nodes to process PID: they go within
seconds of its end, however it ends (make test starts the cluster its packages
share that way).`

// cmdBrokerCluster runs `qlab broker cluster ...`.
func cmdBrokerCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("broker cluster", clusterHelp)
	timeout := fs.Duration("timeout", 5*time.Minute, "up: how long to wait for the cluster to start")
	version := fs.String("version", "", "up: 4.3 runs the nodes in the chroot scripts/rabbitmq.sh builds "+
		"(default: the machine's rabbitmq-server, else Docker)")
	stateFlag := fs.String("state", "", "the file that records the cluster (default: the cache's cluster.json)")
	owner := fs.Int("owner", 0, "up: remove the nodes when process PID ends (default: they outlive the command)")
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("broker cluster takes one of up, down, status, kill NODE, revive NODE")
	}
	verb, rest := pos[0], pos[1:]
	want := map[string]int{"up": 0, "down": 0, "status": 0, "kill": 1, "revive": 1}
	n, ok := want[verb]
	if !ok {
		return usagef("unknown broker cluster command %q: use up, down, status, kill NODE or revive NODE", verb)
	}
	if len(rest) != n {
		if n == 1 {
			return usagef("broker cluster %s takes one NODE (n1, n2, n3 or a full node name)", verb)
		}
		return usagef("broker cluster %s takes no arguments, got %q", verb, rest)
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	if *owner < 0 || (*owner > 0 && syscall.Kill(*owner, 0) != nil) {
		return usagef("--owner %d is no running process", *owner)
	}
	file := *stateFlag
	if file == "" {
		if file, err = cluster.DefaultStateFile(); err != nil {
			return fmt.Errorf("no cache directory to record the cluster in: %v", err)
		}
	}
	switch verb {
	case "up":
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		opts := cluster.Options{StateFile: file, Progress: stderr}
		if *owner > 0 {
			// A test prefix: ReapOrphans removes the nodes of an owner
			// that is gone, should the watchers be killed too.
			opts.Prefix, opts.Owner = "qlabtest", *owner
		}
		if *version != "" {
			if opts.Root, err = cluster.BuiltRoot(*version); err != nil {
				return err
			}
		}
		return clusterUp(ctx, opts, stdout, stderr)
	case "down":
		return clusterDown(ctx, file, stdout, stderr)
	}
	c, err := cluster.Load(file, stderr)
	if errors.Is(err, cluster.ErrNoCluster) {
		return errors.New("no cluster is up; start one with: qlab broker cluster up")
	}
	if err != nil {
		return err
	}
	switch verb {
	case "status":
		return clusterStatus(ctx, c, stdout)
	case "kill":
		led := ledBy(ctx, c, rest[0])
		if err := clusterNode(ctx, c, rest[0], "killing", c.Kill, stdout); err != nil {
			return err
		}
		newLeaders(ctx, c, rest[0], led, stdout)
		return nil
	default:
		return clusterNode(ctx, c, rest[0], "reviving", c.Revive, stdout)
	}
}

// clusterUp starts a cluster, or reports the one recorded if it runs.
func clusterUp(ctx context.Context, opts cluster.Options, stdout, stderr io.Writer) error {
	file := opts.StateFile
	if old, err := cluster.Load(file, stderr); err == nil {
		states := nodeStates(ctx, old)
		switch {
		case !strings.Contains(states, string(cluster.Stopped)) && !strings.Contains(states, string(cluster.Gone)):
			fmt.Fprintln(stdout, "a cluster is already up:")
			printAddresses(stdout, old)
			return nil
		case !strings.Contains(states, string(cluster.Gone)):
			return fmt.Errorf("a cluster is up with a node stopped (%s): revive it (qlab broker cluster revive NODE) "+
				"or remove the cluster (qlab broker cluster down)", states)
		}
		fmt.Fprintf(stderr, "removing what is left of the cluster recorded in %s (%s)\n", file, states)
		if err := old.Down(ctx); err != nil {
			return err
		}
	}
	c, err := cluster.Up(ctx, opts)
	if err != nil {
		return err
	}
	if opts.Owner > 0 {
		if err := watchOwner(c, opts.Owner); err != nil {
			return errors.Join(err, c.Down(context.WithoutCancel(ctx)))
		}
	}
	printAddresses(stdout, c)
	return nil
}

// watchOwner makes each node of c go when process owner ends. Only local
// nodes have a process to watch: containers go with the owner's down.
func watchOwner(c *cluster.Cluster, owner int) error {
	if c.Kind != cluster.Local {
		return nil
	}
	for _, n := range c.Nodes {
		if err := cluster.WatchProcess(n, c.Dir, owner); err != nil {
			return err
		}
	}
	return nil
}

// nodeStates is "n1 running, n2 stopped, n3 down".
func nodeStates(ctx context.Context, c *cluster.Cluster) string {
	parts := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		parts[i] = fmt.Sprintf("%s %s", n.Short, c.State(ctx, n))
	}
	return strings.Join(parts, ", ")
}

// printAddresses prints where to reach each node and the URL list.
func printAddresses(w io.Writer, c *cluster.Cluster) {
	for _, n := range c.Nodes {
		fmt.Fprintf(w, "%s  %s\n    %s\n    management %s  metrics %s\n",
			n.Short, n.Name, n.URL(), n.ManagementURL(), n.MetricsURL())
	}
	fmt.Fprintf(w, "management UI (guest/guest): %s\n", c.Nodes[0].ManagementURL())
	fmt.Fprintf(w, "RABBITMQ_URL=%s\n", c.URLList())
	fmt.Fprintln(w, "stop it with: qlab broker cluster down")
}

// clusterDown removes the recorded cluster, if any, and checks nothing of
// it is left.
func clusterDown(ctx context.Context, file string, stdout, stderr io.Writer) error {
	c, err := cluster.Load(file, stderr)
	if errors.Is(err, cluster.ErrNoCluster) {
		fmt.Fprintln(stdout, "no cluster is recorded: nothing to remove")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "stopping %s\n", strings.Join(c.Names(), ", "))
	if err := c.Down(ctx); err != nil {
		return err
	}
	if left := c.Leftovers(ctx); len(left) > 0 {
		return fmt.Errorf("after down, still there: %s", strings.Join(left, "; "))
	}
	fmt.Fprintf(stdout, "removed cluster %s: no process, port or directory left\n", c.ID)
	return nil
}

// clusterStatus prints each node's state and each quorum queue's leader
// and members (by short node name).
func clusterStatus(ctx context.Context, c *cluster.Cluster, stdout io.Writer) error {
	fmt.Fprintf(stdout, "cluster %s (%s nodes), recorded in %s\n", c.ID, c.Kind, c.StateFile())
	for _, n := range c.Nodes {
		fmt.Fprintf(stdout, "  %s  %-8s %s  %s\n", n.Short, c.State(ctx, n), n.Name, rabbit.Redact(n.URL()))
	}
	queues, err := c.Queues(ctx)
	if err != nil {
		return err
	}
	quorum := 0
	for _, q := range queues {
		if q.Type != "quorum" {
			continue
		}
		if quorum++; quorum == 1 {
			fmt.Fprintln(stdout, "quorum queues:")
		}
		fmt.Fprintf(stdout, "  %s  leader %s  members %s  online %s\n",
			q.Name, short(c, q.Leader), short(c, q.Members...), short(c, q.Online...))
	}
	if quorum == 0 {
		fmt.Fprintln(stdout, "no quorum queues")
	}
	return nil
}

// short names nodes of c by their short names (others as they are).
func short(c *cluster.Cluster, names ...string) string {
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = name
		if n, err := c.Node(name); err == nil {
			out[i] = n.Short
		}
	}
	return strings.Join(out, " ")
}

// leaderWait bounds kill's wait for the quorum queues the stopped node led
// to list a new leader: an election takes seconds, and a status run at
// once could list none of them while it goes on.
const leaderWait = 30 * time.Second

// ledBy lists the quorum queues node name leads now (none where it cannot
// tell: kill reports what it can).
func ledBy(ctx context.Context, c *cluster.Cluster, name string) []string {
	n, err := c.Node(name)
	if err != nil {
		return nil
	}
	queues, _ := c.Queues(ctx)
	var led []string
	for _, q := range queues {
		if q.Type == "quorum" && q.Leader == n.Name {
			led = append(led, q.Name)
		}
	}
	return led
}

// newLeaders waits, within leaderWait, until a running node lists each
// of queues with a leader other than the stopped node, and says who
// leads each one (or that none does yet: with a majority of its members
// down, none will).
func newLeaders(ctx context.Context, c *cluster.Cluster, stopped string, queues []string, stdout io.Writer) {
	if len(queues) == 0 {
		return
	}
	old, _ := c.Node(stopped)
	leaders := map[string]string{}
	_, _ = rabbit.PollUntil(ctx, 250*time.Millisecond, leaderWait, func() (bool, error) {
		listed, _ := c.Queues(ctx)
		for _, q := range listed {
			if slices.Contains(queues, q.Name) && q.Leader != "" && q.Leader != old.Name {
				leaders[q.Name] = short(c, q.Leader)
			}
		}
		return len(leaders) == len(queues), nil
	})
	for _, q := range queues {
		leader, ok := leaders[q]
		if !ok {
			leader = fmt.Sprintf("none listed within %v", leaderWait)
		}
		fmt.Fprintf(stdout, "  %s: new leader %s\n", q, leader)
	}
}

// clusterNode kills or revives one node; a name not in the cluster is a
// usage error.
func clusterNode(ctx context.Context, c *cluster.Cluster, name, doing string,
	do func(context.Context, string) error, stdout io.Writer) error {
	n, err := c.Node(name)
	if err != nil {
		return usagef("%v", err)
	}
	fmt.Fprintf(stdout, "%s %s (%s)\n", doing, n.Short, n.Name)
	if err := do(ctx, n.Short); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s is %s\n", n.Short, c.State(ctx, n))
	return nil
}

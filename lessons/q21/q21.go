// Package q21 is lesson Q21 — quorum queues and a node failure.
//
// Notice: seed 003 declares its queues as quorum queues on three nodes and
// promises that when one node dies "a new leader is elected, messages are
// safe, publisher and consumer auto-reconnect". The lesson runs that on
// the three-node cluster `qlab broker cluster up` started: it declares the
// seed's queues with x-queue-type quorum, publishes sixty birthday
// messages with confirms, lets four workers (prefetch 5) send them, and
// stops the leader's node (rabbitmqctl stop_app) while they work. Count:
// the new leader, each worker whose node died reconnecting, every message
// sent once, the messages they held redelivered, and the status store
// absorbing the copies already sent. A probe publishing all along
// measures how long the client saw no leader.
//
// The workers reconnect at their library's pace (reconnect.go): the seed's
// amqp-connection-manager 5.0.0 with heartbeatIntervalInSeconds 60 waits 60 s
// of lesson time after the close and between tries, so Worker-1 (all three
// URLs) is back after 60 s and Worker-3 (the seed's single RABBITMQ_URL, the
// stopped node's) only once that node is back; Lab-Worker, the lab's own loop,
// is back at once, for contrast. The lesson runs at 4× (WatchSpeed), so the
// minute takes 15 s. In `qlab tui 21` the student pulls the plug instead
// (keys.go): k stops the leader's node when they choose, v revives it.
//
// Then what quorum queues change: the publish latency against a classic
// queue on the same cluster, the delivery limit (x-delivery-count on each
// requeue, and the message dead-lettered or dropped at the limit), and
// at-least-once dead-lettering, which keeps a message the target refused
// where at-most-once, the default, loses it.
//
// Broker-only: memory has no nodes, no leader and no replicas, so an
// in-memory twin would show a queue that cannot fail the way this one does.
//
// Why so long: four parts on a three-node cluster, each a file: the
// failover (failover.go, worker.go), publish latency (latency.go), the
// delivery limit (limit.go, counts.go) and dead-lettering (strategy.go);
// cluster.go stops and revives a node, keys.go answers the student's k and
// v.
package q21

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/seeds/birthday"
)

// Lesson runs on the cluster `qlab broker cluster up` recorded.
var Lesson = New(Recorded)

// New is the lesson on the cluster find returns (a test passes the
// package's shared cluster; the CLI's lesson finds the recorded one).
func New(find Finder) lesson.Lesson {
	return lesson.Lesson{
		ID:    "Q21",
		Title: "Quorum queues and a node failure",
		Notice: "Seed 003's quorum queues on three nodes: sixty birthday messages, four workers " +
			"(prefetch 5), the leader's node stopped mid-run. A new leader takes over, held messages " +
			"come back redelivered, the store skips those SENT; the workers reconnect as the seed's " +
			"amqp-connection-manager does, 60 s later (Worker-1, three URLs) or once the node is back " +
			"(Worker-3, one URL), the lab's loop (Lab-Worker) at once. Then what the replicas cost, " +
			"the delivery limit, and at-least-once dead-lettering.",
		Rabbit:  func(ctx context.Context, env *lesson.Env) error { return run(ctx, env, find) },
		Default: lab.Rabbit,
		Cluster: true,
		// amqp-connection-manager's 60 s waits, twice for Worker-3, in a
		// quarter of the time; stop_app and the later parts take real time.
		WatchSpeed: 4,
		Length:     300 * time.Second,
		// Broker-only, see the package comment. Not enrolled with the
		// lessons the fault suite runs on its private single nodes (they
		// have no node to stop): the suite's cluster group runs it by name
		// on its three-node cluster, where it stages its own fault.
		Faults:     false,
		Topologies: Topologies,
		LosesOnPurpose: []string{
			"AM2", "AM3", // at-most-once dead-lettering into a full target: gone
		},
		Actions: Actions, // in the TUI the student stops the leader's node (k) and revives it (v)
	}
}

// The seed's numbers and the lesson's actors.
const (
	Prefetch  = birthday.Prefetch // QUEUE_CONCURRENCY
	Scheduler = birthday.Scheduler
	Messages  = 60                     // the scheduler's batch
	KillAfter = 10                     // the leader's node stops once this many are SENT
	sendTime  = 500 * time.Millisecond // seed 003: "500ms processing"
	Worker1   = "Worker-1"             // on the leader's node; amqp-connection-manager, all three URLs
	Worker2   = "Worker-2"             // on another node; amqp-connection-manager, all three URLs
	Worker3   = "Worker-3"             // on the leader's node; amqp-connection-manager, its URL only
	LabWorker = "Lab-Worker"           // on the leader's node; the lab's fast reconnect loop
	Probe     = "Leader-Probe"
)

// Finder finds the cluster a run uses.
type Finder func(ctx context.Context, env *lesson.Env) (*cluster.Cluster, error)

// ErrNoCluster says how to get the cluster the lesson needs.
var ErrNoCluster = errors.New("lesson 21 needs a three-node cluster and none is up: " +
	"start one with `qlab broker cluster up` (about a minute)")

// Recorded is the cluster `qlab broker cluster up` recorded. The run's
// broker (Options.Broker), when set, must be that cluster's nodes: the
// lesson stops a node, so it runs only where it started them.
func Recorded(_ context.Context, env *lesson.Env) (*cluster.Cluster, error) {
	c, err := cluster.LoadRecorded(nil)
	if errors.Is(err, cluster.ErrNoCluster) {
		return nil, ErrNoCluster
	}
	if err != nil {
		return nil, err
	}
	if err := OnCluster(env.Broker, c); err != nil {
		return nil, err
	}
	return c, nil
}

// OnCluster checks that every URL of broker (a comma-separated list, ""
// for none) is a node of c.
func OnCluster(broker string, c *cluster.Cluster) error {
	if broker == "" {
		return nil
	}
	for _, u := range rabbit.SplitURLs(broker) {
		if !containsURL(c.URLs(), u) {
			return fmt.Errorf("lesson 21 stops a node of the cluster `qlab broker cluster up` started, "+
				"and %s is not one of its nodes: unset RABBITMQ_URL, or set it to the list "+
				"`qlab broker cluster up` prints", rabbit.Redact(u))
		}
	}
	return nil
}

func containsURL(urls []string, u string) bool {
	for _, x := range urls {
		if strings.TrimSuffix(x, "/") == strings.TrimSuffix(u, "/") {
			return true
		}
	}
	return false
}

// Topologies is what a run declares: the seed's queues (quorum) and the
// queues of the later parts, for qlab broker clean.
func Topologies() []flow.Topology {
	t := SeedTopology()
	for _, q := range extraQueues {
		classic := q == latencyClassic || q == mostTarget || q == leastTarget
		t.Queues = append(t.Queues, flow.Queue{Name: q, Role: flow.Work, Quorum: !classic})
	}
	return []flow.Topology{t, rabbit.ReturnsTopology(), limitTopology()}
}

// limitTopology is what whatCounts's limit probe declares.
func limitTopology() flow.Topology {
	return flow.Topology{Queues: []flow.Queue{
		{Name: rabbit.LimitQueue(rabbit.RejectRequeue), Role: flow.Work, Quorum: true},
		{Name: rabbit.LimitQueue(rabbit.NackRequeue), Role: flow.Work, Quorum: true},
	}}
}

// SeedTopology is seed 003's topology (Q18's) with both queues quorum.
func SeedTopology() flow.Topology {
	t := birthday.Topology()
	for i := range t.Queues {
		t.Queues[i].Quorum = true
	}
	return t
}

// run runs the four parts on the cluster find returns, then revives any
// node the lesson stopped (failover does; cleanup again if the run ended
// before) and deletes what it declared. With the student's keys
// (Options.Act) part 1 stops the node at their k; the later parts answer
// a key with why it does nothing there.
func run(ctx context.Context, env *lesson.Env, find Finder) error {
	c, err := find(ctx, env)
	if err != nil {
		return err
	}
	if err := allRunning(ctx, c); err != nil {
		return err
	}
	r := &runner{env: env, c: c, names: rabbitenv.Names(env), act: env.Act}
	defer r.cleanup(ctx)
	if err := r.failover(ctx); err != nil {
		return err
	}
	defer r.lateKeys()()
	for _, part := range []func(context.Context) error{r.latency, r.deliveryLimit, r.whatCounts, r.deadLetterStrategy} {
		if err := part(ctx); err != nil {
			return err
		}
	}
	return nil
}

// allRunning refuses a cluster with a node down: stopping the leader of
// a queue whose third node is already gone would leave no majority.
func allRunning(ctx context.Context, c *cluster.Cluster) error {
	for _, n := range c.Nodes {
		if st := c.State(ctx, n); st != cluster.Running {
			return fmt.Errorf("node %s of the cluster is %s: the lesson stops one node and needs the "+
				"others running (qlab broker cluster revive %s, or down then up)", n.Short, st, n.Short)
		}
	}
	return nil
}

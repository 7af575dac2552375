package faults

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/lessons/q10"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/rabbit/cluster/clustertest"
)

// clusterBound is how long one run on the cluster may take: a node's
// stop_app and start_app take 5–20 s each on a loaded 2-core machine.
const clusterBound = 6 * time.Minute

// clusterFaults is the node failure on a three-node cluster (the
// package's clustertest cluster): Q10 with every queue declared quorum,
// its main queue's leader stopped at a seeded moment. Q21, which stops
// its own leader, is no case here: its own TestQ21OnACluster runs it end
// to end on the same shared cluster (3.10, and a 4.3 one) and holds more
// than this suite did of it (every message done and sent once, the
// redeliveries counted, every task's fate, lost only AM2 and AM3 and
// with a reason, every node running, no queue left), so a second run
// here only kept the cluster, which the packages take turns on, busy for
// another 45–80 s.
func clusterFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the node failure starts a three-node cluster")
	}
	c := clustertest.Get(t)
	rng := rand.New(rand.NewPCG(seed(), 21))
	at := 1 + rng.IntN(4) // Q10 starts 6 attempts: A, B, D once, C three times
	t.Run("leader/q10-quorum", func(t *testing.T) { leaderStopped(t, c, at) })
	assertClusterClean(t, c)
}

// leaderStopped runs Q10 on the cluster's nodes (a comma-separated URL
// list: the run reconnects to a live node) with every queue quorum
// (Options.Quorum), and stops the node leading its main queue inside the
// at-th Started event: the worker that emitted it holds its delivery
// unacked until the node is down, so at least that one comes back
// redelivered. The node is revived before the trigger lets the run go
// on, still under the run's pause.
func leaderStopped(t *testing.T, c *cluster.Cluster, at int) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterBound)
	defer cancel()
	names := rabbit.RunNames()
	outage := &outageLog{Handler: warnings}
	tr := newTrigger(at)
	tr.kind = lab.Started
	var before, after cluster.NodeSpec
	var stopTook time.Duration
	tr.fire = func(first lab.Event) {
		tr.done <- func() error {
			var err error
			if before, err = c.AwaitLeader(ctx, names.Of(first.Queue)); err != nil {
				return err
			}
			t.Cleanup(func() { revive(t, c, before.Short) }) // also when the case fails
			begin := time.Now()
			if err := c.Kill(ctx, before.Short); err != nil {
				return err
			}
			stopTook = time.Since(begin)
			// The listing may miss the queue while its new leader is
			// elected (once on 3.10.8, two cores busy): ask again.
			if after, err = c.AwaitLeader(ctx, names.Of(first.Queue)); err != nil {
				return err
			}
			// Revived before the run goes on: deleting a quorum queue
			// while one of its members is down waits out the broker's
			// own timeout (seconds a queue, on 3.10.8 here), longer than
			// the run's clean-up bound, and a first try left three of
			// Q10's six queues on the cluster.
			return c.Revive(ctx, before.Short)
		}()
	}
	l := q10.Lesson
	start := time.Now()
	opts := lesson.Options{Backend: lab.Rabbit, Broker: c.URLList(), Speed: l.TestSpeed, Names: rabbitenv.Of(names),
		Quorum: true, Pause: tr.pause, Logger: slog.New(outage)}
	_, runErr := lesson.Run(ctx, l, opts, tr)
	took := time.Since(start)
	hung := ctx.Err() != nil
	events := tr.Events()
	tally := tallyOf(events)
	report(t, fmt.Sprintf("fault=%-7s lesson=%s %s %.1fs leader=%s→%s stop_app=%.1fs reconnect=%s%s", "leader",
		"q10-quorum", tally, took.Seconds(), before.Short, after.Short, stopTook.Seconds(), outage, errNote(runErr)))

	if err := injected(tr, at); err != nil {
		t.Fatalf("stopping the leader's node: %v", err)
	}
	if hung {
		t.Errorf("the run hung: it was still going after %v", clusterBound)
	}
	if runErr != nil {
		t.Errorf("the run failed: %v", runErr)
	}
	if after.Short == before.Short {
		t.Errorf("the main queue's leader is still %s after its node stopped", after.Short)
	}
	logLost(t, events)
	labtest.AssertAccounted(t, events)
	if tally.lost+tally.pending+tally.stranded > 0 {
		t.Errorf("a quorum queue keeps every message through its leader's node stopping: %s", tally)
	}
	if tally.done != 3 || tally.dead != 1 {
		t.Errorf("Q10's outcome changed (want A, B, D done and C dead): %s", tally)
	}
	if tally.redelivered == 0 {
		t.Errorf("the delivery held unacked while its node stopped was not counted redelivered: %s", tally)
	}
	if outage.lost() == 0 {
		t.Errorf("no consumer lost its connection: the stopped node was not the one the run used")
	}
	assertClusterLeftovers(t, c, l, names)
}

// injected says whether the trigger fired and its fault landed.
func injected(tr *trigger, at int) error {
	select {
	case err := <-tr.done:
		return err
	default:
		return fmt.Errorf("the run emitted %d counted events, never reaching the fault's moment (%d)", tr.count, at)
	}
}

// revive starts node name again if it is stopped.
func revive(t *testing.T, c *cluster.Cluster, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := c.Node(name)
	if err != nil || c.State(ctx, n) == cluster.Running {
		return
	}
	if err := c.Revive(ctx, name); err != nil {
		t.Errorf("reviving %s: %v", name, err)
	}
}

// assertClusterLeftovers fails t if a queue the lesson declares is still
// on the cluster under the run's prefix.
func assertClusterLeftovers(t *testing.T, c *cluster.Cluster, l lesson.Lesson, names rabbit.Names) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clusterPrefixes = append(clusterPrefixes, names.Prefix)
	left, err := rabbit.Clean(ctx, c.URLList(), names, l.Topologies(), true)
	if err != nil {
		t.Fatalf("looking for the run's queues: %v", err)
	}
	if len(left.Deleted)+len(left.InUse)+len(left.Exchanges) > 0 {
		t.Errorf("the run left its queues behind: %+v", left)
		_, _ = rabbit.Clean(ctx, c.URLList(), names, l.Topologies(), false)
	}
}

// clusterPrefixes are the prefixes of the runs on the cluster (one case
// at a time: no lock).
var clusterPrefixes []string

// assertClusterClean lists the cluster's queues once and fails t if one
// is under the prefix of a run the suite made, or a node is not running.
func assertClusterClean(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range c.Nodes {
		if st := c.State(ctx, n); st != cluster.Running {
			t.Errorf("node %s is %s after the suite: every stopped node must be revived", n.Short, st)
		}
	}
	queues, err := c.Queues(ctx)
	if err != nil {
		t.Fatalf("listing the cluster's queues: %v", err)
	}
	for _, q := range queues {
		for _, p := range clusterPrefixes {
			if strings.HasPrefix(q.Name, p) {
				t.Errorf("queue %s of a cluster run is still on the cluster", q.Name)
			}
		}
	}
}

// outageLog passes a run's log records on and notes, for each consumer,
// when it lost its connection and when it was back: the longest gap is
// how long the client had no node to consume from (it includes the
// client's redial back-off, and the worker the trigger held up notices
// its loss only when the fault has landed).
type outageLog struct {
	slog.Handler
	mu      sync.Mutex
	losses  int
	lostAt  map[string]time.Time // by actor, while it is reconnecting
	longest time.Duration
}

func (o *outageLog) Handle(ctx context.Context, r slog.Record) error {
	var actor string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "actor" {
			actor = a.Value.String()
		}
		return true
	})
	o.mu.Lock()
	switch {
	case strings.HasPrefix(r.Message, "rabbit: consumer connection lost"):
		o.losses++
		if o.lostAt == nil {
			o.lostAt = map[string]time.Time{}
		}
		o.lostAt[actor] = r.Time
	case strings.HasPrefix(r.Message, "rabbit: consumer reconnected"):
		if lost, ok := o.lostAt[actor]; ok {
			o.longest = max(o.longest, r.Time.Sub(lost))
			delete(o.lostAt, actor)
		}
	}
	o.mu.Unlock()
	return o.Handler.Handle(ctx, r)
}

// lost is how many consumer connections the run lost.
func (o *outageLog) lost() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.losses
}

// String is the longest a consumer was without a connection and how many
// lost theirs, "4.2s(4-conns)", or "-" with none.
func (o *outageLog) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.losses == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs(%d-conns)", o.longest.Seconds(), o.losses)
}

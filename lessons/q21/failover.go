package q21

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// failed is what part 1 measured.
type failed struct {
	leader, newLeader cluster.NodeSpec
	store             string        // the store's kind: SQLite, PostgreSQL
	stopTook          time.Duration // rabbitmqctl stop_app on the leader's node
	noLeader          time.Duration // the probe's longest wait for a confirm
	probes            int           // probe publishes confirmed
	workers           []*worker
	sends             map[string]int // how often each message was sent
	settled           time.Duration  // from the stop to every message sent and acked
	revived           time.Duration  // rabbitmqctl start_app until the node takes connections
	stopped           bool           // the leader's node was stopped (the student may not have)
	revivedBy         string         // "v, mid-run" (the student) or "the lesson"; "" while not revived
}

// failover is part 1: the seed's queues as quorum queues, two workers,
// and the leader's node stopped once KillAfter messages are SENT, or when
// the student presses k in the TUI (awaitStop).
func (r *runner) failover(ctx context.Context) error {
	db, err := runstore.Open(ctx, r.env, "failover")
	if err != nil {
		return err
	}
	defer db.Drop()
	if err := r.declareSeed(ctx); err != nil {
		return err
	}
	ids := messageIDs()
	for i, id := range ids {
		if _, err := db.Insert(ctx, store.Row{ID: id, Kind: routingKey(i), Status: store.Queued}); err != nil {
			return err
		}
	}
	res := &failed{store: db.Kind, sends: map[string]int{}}
	if res.leader, err = r.leaderOf(ctx, birthday.Queue); err != nil {
		return err
	}
	res.newLeader = res.leader
	r.env.Phase(r.failoverTitle(res.leader))
	work, stop := context.WithCancel(ctx)
	defer stop()
	first := r.index(res.leader)
	sh := &shared{db: db, sends: res.sends, attempts: map[string]int{}, reported: map[string]bool{},
		stopping: make(chan struct{}), stopped: make(chan struct{}), leader: res.leader.Short}
	res.workers = []*worker{
		{r: r, name: Worker1, first: first, pace: library(r.from(first)...), shared: sh},
		{r: r, name: Worker2, first: first + 1, pace: library(r.from(first + 1)...), shared: sh},
		{r: r, name: Worker3, first: first, pace: library(first), shared: sh},
		{r: r, name: LabWorker, first: first, pace: labLoop, shared: sh},
	}
	var wg sync.WaitGroup
	for _, w := range res.workers {
		wg.Go(func() { w.run(work) })
	}
	p := &probe{r: r, first: first + 2}
	wg.Go(func() { p.run(work) })
	// Every goroutine ends with work: stop it before waiting, also on an
	// early error return (a bare deferred Wait ran before the deferred
	// stop and hung the run until go test's timeout).
	defer func() { stop(); wg.Wait() }()
	pl := &plug{leader: res.leader.Short, pull: make(chan struct{})}
	stopKeys := r.readKeys(ctx, res, pl)
	defer stopKeys()
	if err := r.publishBatch(ctx, res.leader, ids); err != nil {
		return err
	}
	if res.stopped, err = r.awaitStop(ctx, sh, db, pl); err != nil {
		return err
	}
	stopped := time.Now()
	if res.stopped {
		close(sh.stopping)
		err := r.stopLeader(ctx, res)
		close(sh.stopped)
		if err != nil {
			return err
		}
		pl.out(res.newLeader.Short)
	}
	// Worker-3 knows only the stopped node: it is back only once that
	// node is, so the batch settles without it, then the node revives.
	if err := sh.awaitSettled(ctx, r, db, res.workers[:2]); err != nil {
		return err
	}
	res.settled = time.Since(stopped)
	if err := r.reviveAtEnd(ctx, res); err != nil {
		return err
	}
	if err := sh.awaitSettled(ctx, r, db, res.workers); err != nil {
		return err
	}
	stop()
	wg.Wait()
	stopKeys() // and a revive at the student's v, under way, ends
	res.noLeader, res.probes = p.longestGap()
	if err := r.reviveAtEnd(ctx, res); err != nil { // the later parts want all three nodes
		return err
	}
	r.env.Report(failoverTable(res, r.c))
	r.env.Report(workerTable(res))
	return nil
}

// from is every node's index, starting at first: the URL list a worker
// given all three nodes has.
func (r *runner) from(first int) []int {
	out := make([]int, len(r.c.Nodes))
	for i := range out {
		out[i] = (first + i) % len(r.c.Nodes)
	}
	return out
}

// failoverTitle is part 1's title: when the leader's node stops, and who
// stops it.
func (r *runner) failoverTitle(leader cluster.NodeSpec) string {
	if r.act != nil {
		return fmt.Sprintf("Press k to stop %s (the leader) mid-run, v to revive it", leader.Short)
	}
	return fmt.Sprintf("Seed 003's queues as quorum queues on %d nodes; the leader's node "+
		"is stopped after %d of %d messages are sent", len(r.c.Nodes), KillAfter, Messages)
}

// stopLeader stops the leader's node and finds the leader that took over.
func (r *runner) stopLeader(ctx context.Context, res *failed) (err error) {
	r.env.Phase(fmt.Sprintf("The leader's node stops: rabbitmqctl stop_app on %s, which leads %s",
		res.leader.Short, birthday.Queue))
	if res.stopTook, err = r.kill(ctx, res.leader); err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the run ended mid-stop: cleanup revives the node
		}
		return err
	}
	res.newLeader, err = r.leaderOf(ctx, birthday.Queue)
	if err == nil { // the TUI's status line follows it
		r.env.Log().Info(fmt.Sprintf("q21: %s stopped (stop_app took %.1f s); %s leads %s now",
			res.leader.Short, res.stopTook.Seconds(), res.newLeader.Short, birthday.Queue))
	}
	return err
}

// leaderOf is the node that leads quorum queue queue (a seed-style
// name), asked again until a running node lists it with a leader
// (Cluster.AwaitLeader): a 4.3 cluster just started once left the queue
// out of list_queues right after its declare, on a busy machine.
func (r *runner) leaderOf(ctx context.Context, queue string) (cluster.NodeSpec, error) {
	return r.c.AwaitLeader(ctx, r.names.Of(queue))
}

// reviveAtEnd revives the node the run stopped, unless the student did.
func (r *runner) reviveAtEnd(ctx context.Context, res *failed) error {
	if !res.stopped || res.revivedBy != "" {
		return nil
	}
	begin := time.Now()
	if err := r.revive(ctx); err != nil {
		return err
	}
	res.revived, res.revivedBy = time.Since(begin), "the lesson"
	r.env.Log().Info(fmt.Sprintf("q21: %s revived by the lesson after %.1f s, for %s (it knows only "+
		"that node's URL) and the parts that need three nodes", res.leader.Short, res.revived.Seconds(), Worker3))
	return nil
}

// declareSeed declares seed 003's exchanges and queues (quorum) and the
// probe's queue, from a connection to the first node: a quorum queue's
// first leader is the node that declared it (client-local).
func (r *runner) declareSeed(ctx context.Context) error {
	c, ch, err := r.channel(ctx, 0, false)
	if err != nil {
		return err
	}
	defer c.Close()
	topo := SeedTopology()
	for _, x := range topo.Exchanges {
		if err := r.exchange(ch, x.Name, string(x.Kind)); err != nil {
			return err
		}
	}
	for _, q := range topo.Queues {
		args := amqp.Table{"x-queue-type": "quorum"}
		if q.DeadLetterExchange != "" {
			args["x-dead-letter-exchange"] = r.names.Of(q.DeadLetterExchange)
			args["x-dead-letter-routing-key"] = q.DeadLetterKey
		}
		if err := r.queue(ch, q.Name, args); err != nil {
			return err
		}
	}
	for _, b := range topo.Bindings {
		if err := ch.QueueBind(r.names.Of(b.Queue), b.Key, r.names.Of(b.Exchange), false, nil); err != nil { // noWait
			return err
		}
	}
	// The probe's queue keeps its last 100 messages: it only measures.
	return r.queue(ch, probeQueue, amqp.Table{"x-queue-type": "quorum", "x-max-length": 100})
}

// messageIDs are the batch's messages: M01 … M60.
func messageIDs() []string {
	ids := make([]string, Messages)
	for i := range ids {
		ids[i] = fmt.Sprintf("M%02d", i+1)
	}
	return ids
}

// routingKey alternates the seed's two keys.
func routingKey(i int) string {
	if i%2 == 0 {
		return "birthday"
	}
	return "anniversary"
}

// publishBatch is the minute scheduler's publish: every message through
// the topic exchange, persistent, each confirmed before the next.
func (r *runner) publishBatch(ctx context.Context, on cluster.NodeSpec, ids []string) error {
	c, ch, err := r.channel(ctx, r.index(on), true)
	if err != nil {
		return err
	}
	defer c.Close()
	for i, id := range ids {
		r.env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: birthday.Queue, Actor: Scheduler,
			Note: fmt.Sprintf("key %s, published on %s", routingKey(i), c.node.Short)})
		if err := confirmed(ctx, ch, r.names.Of(birthday.Exchange), routingKey(i), id); err != nil {
			return fmt.Errorf("publishing %s: %w", id, err)
		}
	}
	return nil
}

// shared is what both workers share: the store and the counts.
type shared struct {
	db store.Store
	// stopping closes when the lesson begins to stop the leader's node
	// and stopped when stop_app has returned: a worker on that node holds
	// its acks in between, so the node goes down with messages held at
	// every speed and load (a slow stop_app once let Worker-1 ack all it
	// had, and the run showed no redelivery).
	stopping, stopped chan struct{}
	leader            string // the stopped node's short name
	mu                sync.Mutex
	sends             map[string]int // the mail API's sends, per message
	attempts          map[string]int
	reported          map[string]bool // the send's attempt is in the stream as succeeded
	last              time.Time       // the last delivery any worker took
}

// report notes that id's sending attempt has emitted its succeeded
// event; isReported says whether it has.
func (s *shared) report(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reported[id] = true
}

func (s *shared) isReported(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reported[id]
}

func (s *shared) sent(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends[id]++
}

func (s *shared) attempt(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[id]++
	s.last = time.Now()
	return s.attempts[id]
}

// awaitSent waits until n rows are SENT, within bound.
func (s *shared) awaitSent(ctx context.Context, db store.Statuses, n int, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		counts, err := db.Counts(ctx)
		if err != nil {
			return err
		}
		if counts[store.Sent] >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d messages sent within %s", counts[store.Sent], n, bound)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// workBound bounds a wait for the workers: settleBound on top of the
// batch's own sending time at the run's speed, on the lesson clock, so a
// TUI pause stretches it (the workers stand still meanwhile).
func (r *runner) workBound(ctx context.Context) (context.Context, context.CancelFunc) {
	clock := r.env.Stream.Clock()
	bound := settleBound + clock.Real(Messages*sendTime+2*ReconnectTime)
	ctx, cancel := context.WithCancelCause(ctx)
	t := clock.AfterFunc(clock.Lesson(bound), func() {
		cancel(fmt.Errorf("%w: %s", errBound, bound.Round(time.Second)))
	})
	return ctx, func() { t.Stop(); cancel(nil) }
}

// errBound marks a wait that outlived workBound.
var errBound = errors.New("not within the bound")

// bounded is err, or why ctx ended when workBound ended it.
func (r *runner) bounded(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errBound) {
		return fmt.Errorf("%v: %w", err, cause)
	}
	return err
}

// awaitSettled waits until every message is SENT, none is ready in the
// queue, each of workers consumes again, and no delivery came for quiet:
// the copies the stopped node's worker held have come back and been
// absorbed.
func (s *shared) awaitSettled(ctx context.Context, r *runner, db store.Statuses, workers []*worker) error {
	ctx, cancel := r.workBound(ctx)
	defer cancel()
	c, ch, err := r.channel(ctx, r.index(workers[1].nodeNow()), false)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		ready, err := depth(ch, r.names.Of(birthday.Queue))
		if err != nil {
			return err
		}
		s.mu.Lock()
		idle := time.Since(s.last) >= quiet
		s.mu.Unlock()
		counts, err := db.Counts(ctx)
		if err != nil {
			return err
		}
		if counts[store.Sent] == Messages && ready == 0 && idle && all(workers, (*worker).consuming) {
			return nil
		}
		select {
		case <-ctx.Done():
			return r.bounded(ctx, fmt.Errorf("the queue did not settle (%d of %d sent, %d ready)",
				counts[store.Sent], Messages, ready))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// all reports whether f holds for every worker.
func all(ws []*worker, f func(*worker) bool) bool {
	for _, w := range ws {
		if !f(w) {
			return false
		}
	}
	return true
}

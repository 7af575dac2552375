// Package flowtest is the contract every flow.Backend must keep, as one
// suite each backend runs (watermill's pubsub/tests, for the lab's seam):
// inmem runs it under testing/synctest, rabbit against the real broker.
// Every case holds on both alike: the same decisions give the same fates,
// attempts, routes and waits. What differs between them (flow.Features:
// surviving a crash, a wait queue's depth, exact time) is checked by the
// lessons' parity suite (lessons/parity_test.go), not here; a case that
// can be exact only under exact time asks the backend (flow.FeaturesOf).
// The suite also holds a backend to the optional interfaces it reads
// queues and batches through (flow.Inspector, flow.Batcher): every
// backend the lab has them.
package flowtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
)

// Config says how to run the suite against one backend.
type Config struct {
	// Open returns a fresh backend reporting to stream. The suite closes it
	// within a few seconds; Open's own clean-up (t.Cleanup) must delete
	// whatever that Close left behind.
	Open func(t *testing.T, ctx context.Context, stream *lab.Stream) flow.Backend
	// Speed is the lesson clock's speed (a broker needs real time).
	Speed float64
	// Run runs one case: directly, or inside a synctest bubble.
	Run func(t *testing.T, name string, f func(t *testing.T))
}

// The suite's queues: work dead-letters into wait, whose TTL sends it
// back; dlq is where parked tasks rest; direct dead-letters straight to dlq.
const (
	work   = "work"
	wait   = "work.wait"
	dlq    = "dlq"
	direct = "direct"
	ttl    = time.Second
)

// The suite's exchanges, one of each kind: tasks (direct) routes key
// "work" to work; events (topic) routes order.* to orders and everything
// to audit; all (fanout) reaches orders and audit
// whatever the key.
const (
	orders = "orders"
	audit  = "audit"
	tasksX = "tasks"
	events = "events"
	allX   = "all"
	laterX = "later" // direct: routes key work.wait into the wait queue (seed 004's retry exchange)
)

var topology = flow.Topology{
	Queues: []flow.Queue{
		{Name: work, Role: flow.Work, DeadLetterTo: wait},
		{Name: wait, Role: flow.Wait, TTL: ttl, DeadLetterTo: work},
		{Name: delayQ, Role: flow.Delay, DeadLetterTo: work},
		{Name: direct, Role: flow.Work, DeadLetterTo: dlq},
		{Name: dlq, Role: flow.DLQ},
		{Name: orders, Role: flow.Work},
		{Name: audit, Role: flow.Work},
	},
	Exchanges: []flow.Exchange{{Name: tasksX, Kind: flow.Direct}, {Name: events, Kind: flow.Topic},
		{Name: allX, Kind: flow.Fanout}, {Name: laterX, Kind: flow.Direct}},
	Bindings: []flow.Binding{
		{Exchange: tasksX, Queue: work, Key: work},
		{Exchange: events, Queue: orders, Key: "order.*"},
		{Exchange: events, Queue: audit, Key: "#"},
		{Exchange: allX, Queue: orders},
		{Exchange: allX, Queue: audit},
		{Exchange: laterX, Queue: wait, Key: wait},
	},
}

// Run runs every contract case against cfg's backend.
func Run(t *testing.T, cfg Config) {
	cases := map[string]func(*testing.T, Config){
		"RetryThroughTheWaitQueue":     retryThroughTheWaitQueue(""),
		"RetryCountedInAHeader":        retryThroughTheWaitQueue("retry-count"),
		"ParkAlongTheQueuesRoute":      parkIn(direct),
		"ParkByPublishing":             parkIn(work),
		"DropSaysTheMessageIsGone":     dropSaysTheMessageIsGone,
		"RequeueRepeatsTheAttempt":     requeueRepeatsTheAttempt,
		"RequeueLandsWhereItSays":      requeueLandsWhereItSays,
		"ImpossibleRouteIsAnError":     impossibleRouteIsAnError,
		"EveryTaskIsAccountedFor":      everyTaskIsAccountedFor,
		"ExchangesRouteByKind":         exchangesRouteByKind,
		"UnroutableIsRefused":          unroutableIsRefused,
		"PublishedIntoAWaitQueue":      publishedIntoAWaitQueue,
		"DelayQueueExpiresOnlyItsHead": delayQueueExpiresOnlyItsHead,
		"RetryAfterNeedsItsDelayQueue": retryAfterNeedsItsDelayQueue,
		"PrefetchHoldsUpToItsWindow":   prefetchHoldsUpToItsWindow,
		"BatchUpToSizeOrWait":          batchUpToSizeOrWait,
		"BatchSettlesEachOnItsOwn":     batchSettlesEachOnItsOwn,
		"BatchKeepsASmallerPrefetch":   batchKeepsASmallerPrefetch,
		"PoliciesRunOnEveryBackend":    policiesRunOnEveryBackend,
	}
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cfg.Run(t, name, func(t *testing.T) { cases[name](t, cfg) })
	}
}

// harness is one case's backend, stream and recorder.
type harness struct {
	b      flow.Backend
	stream *lab.Stream
	rec    *labtest.Recorder
	ctx    context.Context
}

func open(t *testing.T, cfg Config) *harness {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	rec := &labtest.Recorder{}
	stream := lab.NewStream("flowtest", "", lab.NewClock(cfg.Speed), rec)
	b := cfg.Open(t, ctx, stream)
	t.Cleanup(func() {
		closing, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(closing); err != nil { // Open's own clean-up deletes what it left
			t.Logf("closing the backend: %v", err)
		}
	})
	require.NoError(t, b.Declare(ctx, topology))
	return &harness{b: b, stream: stream, rec: rec, ctx: ctx}
}

// run publishes tasks to queue and waits until the backend is idle, then
// ends the stream and returns its events.
func (h *harness) run(t *testing.T, queue string, tasks ...string) []lab.Event {
	for _, id := range tasks {
		require.NoError(t, h.b.Publish(h.ctx, "Producer", queue, id))
	}
	require.NoError(t, h.b.Wait(h.ctx))
	h.stream.Finish()
	return h.rec.Events()
}

// inspect is the backend's Inspector: the suite reads queues through it,
// and every backend the suite runs has one.
func (h *harness) inspect(t *testing.T) flow.Inspector {
	in, ok := h.b.(flow.Inspector)
	require.True(t, ok, "the contract reads queues: %s is no flow.Inspector", h.b.Kind())
	return in
}

// attempt reports one processing attempt of d, as a lesson's handler
// does, failing it when fail is set.
func (h *harness) attempt(d *flow.Delivery, fail bool) error {
	return h.stream.Attempt(d.Event("Worker"), func() error {
		if fail {
			return errors.New("not yet")
		}
		return nil
	})
}

// attempts records the attempt number of every delivery per task; only
// handlers write it, one goroutine per consumer, read after Wait.
type attempts map[string][]int

func (a attempts) see(d *flow.Delivery) { a[d.Task] = append(a[d.Task], d.Attempt) }

func retryThroughTheWaitQueue(header string) func(*testing.T, Config) {
	return func(t *testing.T, cfg Config) {
		h := open(t, cfg)
		seen := attempts{}
		require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker", RetryHeader: header,
			Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
				seen.see(d)
				if err := h.attempt(d, d.Task == "C" && d.Attempt < 3); err != nil {
					return flow.Retry(wait, err)
				}
				return flow.Ack()
			}}))
		events := h.run(t, work, "A", "C")
		assert.Equal(t, []int{1}, seen["A"])
		assert.Equal(t, []int{1, 2, 3}, seen["C"], "each retry counts one more attempt")
		waits := labtest.Of(events, "C", lab.Scheduled)
		require.Len(t, waits, 2)
		for i, e := range waits {
			assert.Equal(t, work, e.Queue, "the queue it left")
			assert.Equal(t, wait, e.Via, "the wait queue it sits in")
			assert.Equal(t, work, e.To, "where the wait sends it")
			assert.Equal(t, ttl.Milliseconds(), e.DelayMs, "the wait queue's TTL")
			assert.Equal(t, i+1, e.Attempt)
		}
		fate, n := labtest.Summary(t, events, "C")
		assert.Equal(t, []any{lab.FateDone, 3}, []any{fate, n})
	}
}

func parkIn(from string) func(*testing.T, Config) {
	return func(t *testing.T, cfg Config) {
		h := open(t, cfg)
		require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: from, Actor: "Worker",
			Handle: func(context.Context, *flow.Delivery) flow.Decision { return flow.Park(dlq, "poison") }}))
		events := h.run(t, from, "C")
		parked := labtest.Of(events, "C", lab.DeadLettered)
		require.Len(t, parked, 1)
		assert.Equal(t, from, parked[0].Queue)
		assert.Equal(t, dlq, parked[0].To)
		assert.Equal(t, "poison", parked[0].Note)
		fate, _ := labtest.Summary(t, events, "C")
		assert.Equal(t, lab.FateDead, fate)

		held, err := h.inspect(t).Peek(h.ctx, dlq, 10)
		require.NoError(t, err)
		require.Len(t, held, 1, "the DLQ holds C")
		assert.Equal(t, "C", held[0].Task)
		again, err := h.inspect(t).Peek(h.ctx, dlq, 10)
		require.NoError(t, err)
		assert.Len(t, again, 1, "peeking left it there")
		n, err := h.inspect(t).Depth(h.ctx, dlq)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	}
}

func dropSaysTheMessageIsGone(t *testing.T, cfg Config) {
	h := open(t, cfg)
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker",
		Handle: func(context.Context, *flow.Delivery) flow.Decision { return flow.Drop("gave up") }}))
	events := h.run(t, work, "C")
	fate, _ := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDropped, fate)
	held, err := h.inspect(t).Peek(h.ctx, dlq, 10)
	require.NoError(t, err)
	assert.Empty(t, held)
}

func requeueRepeatsTheAttempt(t *testing.T, cfg Config) {
	h := open(t, cfg)
	seen := attempts{}
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker",
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			seen.see(d)
			if len(seen[d.Task]) == 1 {
				return flow.Requeue()
			}
			_ = h.attempt(d, false)
			return flow.Ack()
		}}))
	events := h.run(t, work, "C")
	assert.Equal(t, []int{1, 1}, seen["C"], "a requeue is not a retry: the attempt repeats")
	moved := labtest.Of(events, "C", lab.Moved)
	require.Len(t, moved, 1)
	assert.Equal(t, work, moved[0].To)
}

// requeueLandsWhereItSays: the moved event of a requeue says where the
// task went back (lab.Place), and the next delivery shows it: C and D wait
// in a classic queue, one consumer at prefetch 1 requeues C once. Memory
// appends it (D next); the broker puts it back at its original position,
// the head (C again at once). The TUI draws the token where Place says.
func requeueLandsWhereItSays(t *testing.T, cfg Config) {
	h := open(t, cfg)
	for _, id := range []string{"C", "D"} { // both wait before anyone consumes
		require.NoError(t, h.b.Publish(h.ctx, "Producer", work, id))
	}
	var order []string
	requeued := false
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker", Prefetch: 1,
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			order = append(order, d.Task)
			if d.Task == "C" && !requeued {
				requeued = true
				return flow.Requeue()
			}
			_ = h.attempt(d, false)
			return flow.Ack()
		}}))
	require.NoError(t, h.b.Wait(h.ctx))
	h.stream.Finish()
	moved := labtest.Of(h.rec.Events(), "C", lab.Moved)
	require.Len(t, moved, 1)
	want := map[lab.Place][]string{lab.AtHead: {"C", "C", "D"}, lab.AtTail: {"C", "D", "C"}}[moved[0].Place]
	assert.Equal(t, want, order, "the requeue said %q", moved[0].Place)
}

func impossibleRouteIsAnError(t *testing.T, cfg Config) {
	h := open(t, cfg)
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: direct, Actor: "Worker",
		Handle: func(context.Context, *flow.Delivery) flow.Decision { return flow.Retry(wait, errors.New("x")) }}))
	require.NoError(t, h.b.Publish(h.ctx, "Producer", direct, "C"))
	err := h.b.Wait(h.ctx)
	require.ErrorIs(t, err, flow.ErrNoRoute, "direct does not dead-letter into work.wait")
	h.stream.Finish()
	fate, _ := labtest.Summary(t, h.rec.Events(), "C")
	assert.Equal(t, lab.FateLost, fate, "the stream says what became of it")
}

// everyTaskIsAccountedFor mixes every decision over many tasks and checks
// the stream's accounting.
func everyTaskIsAccountedFor(t *testing.T, cfg Config) {
	h := open(t, cfg)
	decide := []func(*flow.Delivery) flow.Decision{
		func(d *flow.Delivery) flow.Decision { _ = h.attempt(d, false); return flow.Ack() },
		func(d *flow.Delivery) flow.Decision {
			if err := h.attempt(d, d.Attempt < 2); err != nil {
				return flow.Retry(wait, err)
			}
			return flow.Ack()
		},
		func(*flow.Delivery) flow.Decision { return flow.Park(dlq, "poison") },
		func(*flow.Delivery) flow.Decision { return flow.Drop("gave up") },
	}
	var tasks []string
	for i := range 20 {
		tasks = append(tasks, string(rune('a'+i)))
	}
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker",
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			return decide[int(d.Task[0]-'a')%len(decide)](d)
		}}))
	events := h.run(t, work, tasks...)
	labtest.AssertAccounted(t, events)
	counts := map[lab.Fate]int{}
	for _, r := range labtest.Fates(events) {
		counts[r.Fate]++
	}
	assert.Equal(t, map[lab.Fate]int{lab.FateDone: 10, lab.FateDead: 5, lab.FateDropped: 5}, counts)
}

// exchangesRouteByKind publishes through a direct, a topic and a fanout
// exchange: each copy reaches the queues the bindings say, and only those.
func exchangesRouteByKind(t *testing.T, cfg Config) {
	h := open(t, cfg)
	ack := func(_ context.Context, d *flow.Delivery) flow.Decision { _ = h.attempt(d, false); return flow.Ack() }
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker", Handle: ack}))
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: orders, Actor: "Orders", Handle: ack}))
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: audit, Actor: "Auditor", Handle: ack}))
	sends := []struct{ exchange, key, task string }{
		{tasksX, work, "D"},            // direct: the key names the binding
		{events, "order.created", "O"}, // topic: order.* and #
		{events, "user.created", "U"},  // topic: # only
		{allX, "whatever", "F"},        // fanout: every bound queue
	}
	for _, p := range sends {
		require.NoError(t, h.b.PublishTo(h.ctx, "Producer", p.exchange, p.key, p.task))
	}
	require.NoError(t, h.b.Wait(h.ctx))
	h.stream.Finish()
	got := h.rec.Events()
	reached := func(task string) []string {
		var qs []string
		for _, e := range labtest.Of(got, task, lab.Enqueued) {
			qs = append(qs, e.Queue)
			assert.Contains(t, e.Note, "via exchange", "the enqueued event says how it came")
		}
		return qs
	}
	assert.Equal(t, []string{work}, reached("D"))
	assert.Equal(t, []string{orders, audit}, reached("O"))
	assert.Equal(t, []string{audit}, reached("U"))
	assert.Equal(t, []string{orders, audit}, reached("F"))
	for _, task := range []string{"D", "O", "U", "F"} {
		fate, _ := labtest.Summary(t, got, task)
		assert.Equal(t, lab.FateDone, fate, task)
	}
	audited := map[string]bool{}
	for _, e := range labtest.OfKind(got, lab.Started) {
		if e.Queue == audit {
			audited[e.Task] = true
		}
	}
	assert.Equal(t, map[string]bool{"O": true, "U": true, "F": true}, audited, "the auditor saw a copy of every event and fanout message")
	labtest.AssertAccounted(t, got)
}

// unroutableIsRefused publishes with a key no binding matches: the task
// is reported refused, never enqueued (on a broker, it came back from a
// mandatory publish), and an exchange the topology lacks is a lesson's
// mistake.
func unroutableIsRefused(t *testing.T, cfg Config) {
	h := open(t, cfg)
	err := h.b.PublishTo(h.ctx, "Producer", tasksX, "nobody", "U")
	require.ErrorIs(t, err, flow.ErrUnroutable)
	require.ErrorIs(t, h.b.PublishTo(h.ctx, "Producer", "no-such-exchange", "work", "V"), flow.ErrNoRoute)
	require.NoError(t, h.b.Wait(h.ctx))
	h.stream.Finish()
	got := h.rec.Events()
	assert.Equal(t, []lab.Kind{lab.Refused}, labtest.Kinds(got, "U"), "refused, never enqueued")
	assert.Contains(t, labtest.Of(got, "U", lab.Refused)[0].Note, "unroutable")
	fate, _ := labtest.Summary(t, got, "U")
	assert.Equal(t, lab.FateRefused, fate)
	assert.Empty(t, labtest.Of(got, "V"), "nothing was published for V")
	n, err := h.inspect(t).Depth(h.ctx, work)
	require.NoError(t, err)
	assert.Zero(t, n, "no queue took U")
	labtest.AssertAccounted(t, got)
}

// publishedIntoAWaitQueue publishes through an exchange bound to the wait
// queue (seed 004's retry exchange): the message sits out the queue's TTL
// there, never earlier, then its dead-letter route brings it to work.
func publishedIntoAWaitQueue(t *testing.T, cfg Config) {
	h := open(t, cfg)
	clock := h.stream.Clock()
	start := clock.Elapsed()
	var at time.Duration // written by the one handler, read after Wait
	require.NoError(t, h.b.Consume(h.ctx, flow.Consumer{Queue: work, Actor: "Worker",
		Handle: func(_ context.Context, d *flow.Delivery) flow.Decision {
			at = clock.Elapsed() - start
			_ = h.attempt(d, false)
			return flow.Ack()
		}}))
	require.NoError(t, h.b.PublishTo(h.ctx, "Producer", laterX, wait, "L"))
	require.NoError(t, h.b.Wait(h.ctx))
	h.stream.Finish()
	got := h.rec.Events()
	enq := labtest.Of(got, "L", lab.Enqueued)
	require.NotEmpty(t, enq)
	assert.Equal(t, wait, enq[0].Queue, "it went into the wait queue first")
	assert.GreaterOrEqual(t, at, ttl, "consumed no sooner than the wait queue's TTL")
	fate, n := labtest.Summary(t, got, "L")
	assert.Equal(t, []any{lab.FateDone, 1}, []any{fate, n})
	labtest.AssertAccounted(t, got)
}

// Package q15 is lesson Q15 — where does a nack go? Seed 002's
// notification service describes three routes for a failed email, and
// its worker settles some deliveries twice.
//
// Notice: run 1 (dA–dD) wires what the diagram draws, and C's nack
// lands in email-retry-queue, where nothing gives it a TTL: it never comes
// back. Run 2 (qA–qD) declares the queue arguments the document lists:
// the nack goes email-dlx → email-dlq on the first failure, no retry at
// all. Run 3 (rA–rD) is the retry code: a copy with its own expiration
// per retry, the original acked, the nack only at the limit. Runs 4 and 5
// are that code as the document writes it: the consume callback acks a
// delivery processMessage already settled, the broker closes the channel
// (406), and what the worker held unacked comes back redelivered.
//
// Broker only: the lesson is about where RabbitMQ routes a message (a
// queue's dead-letter arguments, an exchange's bindings, a per-message
// expiration, a channel-level exception). In memory there is no broker to
// ask.
//
// Why so long: five runs, one per route the seed's document describes and
// two for its code as written, with a worker written in amqp091-go's own
// calls (worker.go) so every settle, and the one the broker refuses, is on
// the page; landing.go reads where each message landed.
package q15

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

var Lesson = lesson.Lesson{
	ID:    "Q15",
	Title: "Where does a nack go? Three routes and a double settle",
	Notice: "Seed 002's document gives three routes for a failed email, one run each: the diagram's " +
		"(dA–dD) strands C in email-retry-queue, the queue arguments' (qA–qD) park it in " +
		"email-dlq at once, the retry code's (rA–rD) retries copies with their own expiration. " +
		"Runs 4 and 5 are that code as written: the callback acks a delivery already settled, the " +
		"broker closes the channel (406), and what it held comes back redelivered. Broker only: " +
		"in memory there is no routing to ask.",
	Rabbit:     runQ15,
	Default:    lab.Rabbit,
	TestSpeed:  20, // the shortest expiration used, 300 ms, is 15 ms real
	Topologies: notify.Topologies,
	Faults:     true, // in the fault suite (lessons/faults)
}

// q15Scale divides the document's RETRY_DELAYS (10 s … 5 min): the route,
// not the wait, is the lesson, and 300 ms … 3 s keep a run short.
const q15Scale = 100

// q15Delay is the document's getRetryDelay(retries), scaled.
func q15Delay(retries int) time.Duration { return notify.RetryDelay(retries) / q15Scale }

// q15Prefetch is runs 4's prefetch: room for the whole default plan, so
// every job behind C is unacked on the channel when C is settled twice.
// Run 5 uses the document's prefetch 1.
const q15Prefetch = 10

// q15Run is one version of the document, run on a broker topology of its
// own (a fresh run prefix).
type q15Run struct {
	prefix   string // task ids are prefix + the plan's ids
	title    string // the phase title
	version  string // which part of the document this run plays
	diagram  bool   // declare notify.DiagramTopology, not notify.Topology
	retry    bool   // the worker runs processMessage's retry code
	ackAgain bool   // the consume callback acks after processMessage settled (the document as written)
	prefetch int
	actor    string
}

// The lesson's runs, in order.
var q15Runs = []q15Run{
	{prefix: "d", diagram: true, prefetch: 1, actor: "Diagram-Worker",
		title:   "Run 1 (dA–dD): the diagram — nack → email-dlx → email-retry-queue",
		version: "the diagram: \"On reject/NACK\" → email-retry-queue \"via DLX\""},
	{prefix: "q", prefetch: 1, actor: "Arguments-Worker",
		title:   "Run 2 (qA–qD): the queue arguments — nack → email-dlx → email-dlq",
		version: "the queue arguments: x-dead-letter-exchange email-dlx, x-dead-letter-routing-key email-dlq"},
	{prefix: "r", retry: true, prefetch: 1, actor: "Retry-Worker",
		title:   "Run 3 (rA–rD): the retry code — a copy with its TTL, ack the original, nack at the limit",
		version: "the retry code: publishToRetryQueue(job, delay), ack; nack when retries >= MAX_RETRIES"},
	{prefix: "s", retry: true, ackAgain: true, prefetch: q15Prefetch, actor: "Seed-Worker",
		title:   fmt.Sprintf("Run 4 (sA–sD): the document as written, prefetch %d — processMessage settles, then the callback acks again", q15Prefetch),
		version: "the retry code inside the consume callback, which acks again"},
	{prefix: "p", retry: true, ackAgain: true, prefetch: 1, actor: "Seed-Worker-P1",
		title:   "Run 5 (pA–pD): the same at the document's prefetch 1",
		version: "the same, at the document's prefetch 1"},
}

// runQ15 runs each version on the broker and reports where the failed
// messages landed and what the double settle did.
func runQ15(ctx context.Context, env *lesson.Env) error {
	var outcomes []*q15Outcome
	for _, run := range q15Runs {
		env.Phase(run.title)
		o, err := q15RunOnce(ctx, env, run)
		if o != nil {
			outcomes = append(outcomes, o)
		}
		if err != nil {
			return err
		}
	}
	env.Report(q15RoutesTable(outcomes))
	env.Report(q15SettleTable(outcomes))
	return nil
}

// q15RunOnce declares run's topology on a session of its own, publishes
// the plan's jobs to email-queue, lets one worker handle them until each
// is acked or nacked, then reads where the nacked ones landed.
func q15RunOnce(ctx context.Context, env *lesson.Env, run q15Run) (*q15Outcome, error) {
	b, err := env.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer env.Close(ctx, b)
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return nil, err
	}
	topo := notify.Topology(0)
	if run.diagram {
		topo = notify.DiagramTopology(s.Names.Of(notify.EmailQueue))
	}
	if err := b.Declare(ctx, topo); err != nil {
		return nil, err
	}
	o := &q15Outcome{run: run, version: rabbit.ServerVersion(s.Connection()), names: s.Names, book: newQ15Book()}
	o.args = rabbit.Arguments(topo.Queues[0], rabbit.SeedNames(), env.Stream.Clock())
	pub, err := s.Publisher(ctx)
	if err != nil {
		return o, err
	}
	defer pub.Close()
	var tasks []string
	for _, id := range env.Plan.Tasks {
		task := run.prefix + id
		tasks = append(tasks, task)
		env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: notify.EmailQueue, Actor: "API"})
		if err := pub.Publish(ctx, notify.EmailQueue, task, notify.NewJob(task, time.UnixMilli(1707217200000)).Encode()); err != nil {
			return o, err
		}
	}
	w := &q15Worker{env: env, s: s, pub: pub, run: run, book: o.book}
	if err := w.work(ctx, tasks); err != nil {
		return o, err
	}
	return o, o.land(ctx, env, s, tasks)
}

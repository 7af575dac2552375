// Package q19 is lesson Q19 — transient against permanent, and the delay
// RabbitMQ cannot do.
//
// Notice: the birthday worker (seed 003) sorts its errors. A network
// error, a timeout or a rate limit is transient: retry after 2 s·2ⁿ (2, 4,
// 8, 16, 32 s), then give up to the DLQ. A validation error, a missing row
// or a refused login is permanent: the DLQ at once, with the reason.
// Part (a) runs that schedule through TTL wait queues, one per delay, and
// the worker counts the retries in a header of its own.
//
// The seed says "NACK + requeue with delay". RabbitMQ has no such thing: a
// requeue puts the message back at once, unchanged. Part (b) fakes the
// delay the way people do, a timer before the nack: the message stays
// unacked and holds one of the worker's five slots (prefetch 5) for the
// whole wait, so five waiting messages stall a healthy one behind them;
// and since a requeue changes no header, the retry count read from the
// message never grows and the backoff never backs off. The same load
// through the wait queues of part (a) leaves every slot free.
//
// Why so long: part (a) runs the transient and permanent schedule through
// TTL wait queues (parts.go); part (b) runs the timer before the nack on a
// classic queue (stall.go) and on a quorum queue (quorum.go); beside.go is
// part (b)'s load as Q25 runs it again.
package q19

import (
	"context"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/birthday"
)

var Lesson = lesson.Lesson{
	ID:    "Q19",
	Title: "Transient against permanent, and the delay RabbitMQ cannot do",
	Notice: "Transient errors (network, timeout, rate limit) retry after 2, 4, 8, 16 and 32 s " +
		"through TTL wait queues, then go to the DLQ; permanent ones (validation, not found, " +
		"auth) go to the DLQ at once with the reason. The seed's \"NACK + requeue with delay\" " +
		"does not exist: faked with a timer before the nack, each waiting message holds one of " +
		"the five prefetch slots, five of them stall a healthy message, and the retry count " +
		"read from the requeued message never grows.",
	InMem:      runQ19,
	Rabbit:     runQ19,
	Default:    lab.Rabbit, // the requeue and its redelivered flag are the broker's
	WatchSpeed: 5,          // the 62 s schedule in about 13 s
	Length:     125 * time.Second,
	TestSpeed:  20,
	Parity: lesson.Parity{TimingSensitive: "part (b)'s attempts are how many 2 s holds fit in " +
		"the 30 s rate limit, which on a broker depends on when the redeliveries land"},
	Topologies: func() []flow.Topology {
		return []flow.Topology{birthday.RetryTopology(), stallTopology(), rabbit.ReturnsTopology()}
	},
	Faults: true, // in the fault suite (lessons/faults)
}

// sendTime is how long one attempt takes (lesson time).
const sendTime = 100 * time.Millisecond

// runQ19 runs both parts.
func runQ19(ctx context.Context, env *lesson.Env) error {
	if err := classify(ctx, env); err != nil {
		return err
	}
	return stall(ctx, env)
}

// worker is a birthday worker on one backend, with the lesson's
// stopwatch.
type worker struct {
	env   *lesson.Env
	b     flow.Backend
	clock lab.Clock
	fails func(task string, attempt int, at time.Duration) error
	log   *attemptLog
}

// open starts a backend with the topology declared.
func open(ctx context.Context, env *lesson.Env) (flow.Backend, error) {
	b, err := env.Open(ctx)
	if err != nil {
		return nil, err
	}
	if err := env.Declare(ctx, b, birthday.RetryTopology()); err != nil {
		env.Close(ctx, b)
		return nil, err
	}
	return b, nil
}

// attempt runs one attempt of d: it records it, takes sendTime and fails
// as the load says.
func (w *worker) attempt(ctx context.Context, d *flow.Delivery, actor string) error {
	at := w.clock.Elapsed() - w.log.start
	err := w.env.Stream.Attempt(d.Event(actor), func() error {
		if err := w.clock.Wait(ctx, sendTime); err != nil {
			return err
		}
		return w.fails(d.Task, d.Attempt, at)
	})
	w.log.add(attemptRow{task: d.Task, attempt: d.Attempt, at: at, err: err,
		count: headerCount(d), redelivered: d.Redelivered})
	return err
}

// headerCount is the retry count the message itself carries (the lab's
// retry header on a broker; 0 in memory, whose messages carry none): what
// a worker that reads its count from the message sees.
func headerCount(d *flow.Delivery) int {
	n, _ := rabbit.ReadRetries(amqp.Table(d.Headers), rabbit.RetryCountHeader)
	return n
}

package lessons

// Q10 — the whole flow on RabbitMQ.
//
// Notice: the workers never wait and never move a message themselves. A
// failing worker rejects the message; the broker dead-letters it into a
// wait queue nobody consumes, and the wait queue's TTL (1 s, then 2 s)
// dead-letters it on to the next worker. The transcript reads like Q09's,
// but the delays and moves now survive a restart of this process.

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

var q10 = Lesson{
	ID:    "Q10",
	Title: "The whole flow on RabbitMQ: TTL + dead-letter wait queues",
	Notice: "No worker sleeps or moves a message: a failing worker rejects it, the broker dead-letters it into a wait queue nobody consumes, " +
		"and that queue's TTL (1 s, then 2 s) sends it on to the next worker, then to the DLQ and its alert. Same story as Q09, but the broker holds every delay.",
	InMem:  runQ09, // the Q09 flow on channels, so both backends can be compared
	Rabbit: runQ10Rabbit,
}

// The workers of Q10, one consumer (and goroutine) each.
const (
	q10Sequential  = "Sequential-Rabbit-Worker"
	q10Retry       = "Retry-Rabbit-Worker"
	q10SecondRetry = "Second-Retry-Rabbit-Worker"
	q10DLQ         = "DLQ-Rabbit-Worker"
)

func runQ10Rabbit(ctx context.Context, env *Env) error {
	s, err := rabbit.Open(ctx, env.Broker, brokerNames(env), env.Stream.Clock(), nil)
	if err != nil {
		return err
	}
	defer closeSession(ctx, env, s)
	topo := rabbit.SequentialTopology()
	if err := s.Declare(ctx, topo); err != nil {
		return err
	}
	env.Report(topologyTable(topo, s))
	var alerts atomic.Int64
	if err := q10Workers(ctx, env, s, topo, &alerts); err != nil {
		return err
	}
	for _, q := range topo.Queues {
		env.Watch(q.Name, func(ctx context.Context) (int, error) { return s.Depth(ctx, q.Name) })
	}
	defer env.interruptAfter(s.InterruptConsumers)()
	if err := q10Produce(ctx, env, s); err != nil {
		return err
	}
	return s.WaitSettled(ctx, env.Stream, func() bool { return alerts.Load() == deadCount(env.Stream) })
}

// q10Produce enqueues every task on sequential.queue, each publish
// confirmed by the broker before the next.
func q10Produce(ctx context.Context, env *Env, s *rabbit.Session) error {
	pub, err := s.Publisher(ctx)
	if err != nil {
		return err
	}
	defer pub.Close()
	for _, id := range env.Plan.Tasks {
		env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: rabbit.SequentialQueue, Actor: "Producer"})
		if err := pub.Publish(ctx, rabbit.SequentialQueue, id, nil); err != nil {
			return err
		}
	}
	return nil
}

// q10Workers starts the four consumers. A processing worker that fails
// reports where the broker will take the message, then rejects it.
func q10Workers(ctx context.Context, env *Env, s *rabbit.Session, topo rabbit.Topology, alerts *atomic.Int64) error {
	process := rabbit.Simulate(env.Plan, env.Stream.Clock())
	retryVia := func(actor string, waitQueue string) rabbit.Handler {
		wait, _ := topo.Queue(waitQueue)
		return func(ctx context.Context, d *rabbit.Delivery) {
			if rabbit.Attempt(ctx, env.Stream, actor, d, process) == nil {
				_ = d.Ack() // a lost ack means a redelivery, which the consumer reports
				return
			}
			// The rejected message waits out the TTL in the wait queue, then the
			// broker dead-letters it on: the event happens at the wait queue.
			env.Stream.Emit(lab.Event{Kind: lab.Scheduled, Task: d.Task, Queue: waitQueue, To: wait.DeadLetterTo, Actor: actor,
				Attempt: d.Attempt(), DelayMs: wait.TTL.Milliseconds(),
				Note: fmt.Sprintf("rejected from %s; x-message-ttl %s", d.Queue, wait.TTL)})
			_ = d.Reject()
		}
	}
	lastTry := func(ctx context.Context, d *rabbit.Delivery) {
		if rabbit.Attempt(ctx, env.Stream, q10SecondRetry, d, process) == nil {
			_ = d.Ack()
			return
		}
		env.Stream.Emit(lab.Event{Kind: lab.DeadLettered, Task: d.Task, Queue: d.Queue, To: rabbit.SequentialDLQ,
			Actor: q10SecondRetry, Attempt: d.Attempt(), Note: "failed all retries"})
		_ = d.Reject()
	}
	mailer := inmem.Mailer{Stream: env.Stream}
	alert := func(_ context.Context, d *rabbit.Delivery) {
		if d.Redelivered { // the consumer just reported it pending again; it is still parked
			env.Stream.Emit(lab.Event{Kind: lab.DeadLettered, Task: d.Task, Queue: d.Queue, To: d.Queue, Actor: q10DLQ,
				Attempt: d.Attempt() - 1, Note: "still parked in the DLQ after a redelivery"})
		}
		mailer.Send(d.Task, inmem.DLQAlert(d.Task))
		if d.Ack() == nil {
			alerts.Add(1)
		}
	}
	type worker struct {
		queue, actor string
		handle       rabbit.Handler
	}
	var workers []worker
	for i := range env.Consumers {
		actor := workerName(q10Sequential, i, env.Consumers)
		workers = append(workers, worker{rabbit.SequentialQueue, actor, retryVia(actor, rabbit.SequentialRetryWait)})
	}
	workers = append(workers, []worker{
		{rabbit.SequentialRetryProcessing, q10Retry, retryVia(q10Retry, rabbit.SequentialSecondRetryWait)},
		{rabbit.SequentialSecondProcessing, q10SecondRetry, lastTry},
		{rabbit.SequentialDLQ, q10DLQ, alert},
	}...)
	for _, w := range workers {
		opts := rabbit.ConsumerOptions{Queue: w.queue, Actor: w.actor, Prefetch: 1, Stream: env.Stream}
		if _, err := s.Consume(ctx, opts, w.handle); err != nil {
			return err
		}
	}
	return nil
}

// deadCount is how many tasks the stream has seen dead-lettered for good.
func deadCount(stream *lab.Stream) int64 {
	var n int64
	for _, t := range stream.Tasks() {
		if t.Fate == lab.FateDead {
			n++
		}
	}
	return n
}

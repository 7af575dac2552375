// Package q10 is lesson Q10 — the whole flow, with the waiting done by queues.
//
// Notice: no worker sleeps or moves a message. A failing worker hands the
// message back with a decision (retry via a wait queue, or park), and the
// backend does the rest. On RabbitMQ the worker rejects it, the queue's
// dead-letter route drops it into a wait queue nobody consumes, and that
// queue's TTL (1 s, then 2 s) dead-letters it on to the next worker: the
// delays survive a crash of this process. In memory the same decision
// becomes a time.AfterFunc timer, and a crash loses it (qlab compare 10).
package q10

import (
	"context"
	"time"

	"github.com/queuelab/qlab/lessons/q09"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
)

var Lesson = lesson.Lesson{
	ID:    "Q10",
	Title: "The whole flow on RabbitMQ: TTL + dead-letter wait queues",
	Notice: "No worker sleeps or moves a message: a failing worker rejects it, the broker dead-letters it into a wait queue nobody consumes, " +
		"and that queue's TTL (1 s, then 2 s) sends it on to the next worker, then to the DLQ and its alert. Same story as Q09, but the broker holds every delay. " +
		"With --backend inmem the same decisions run on time.AfterFunc timers instead; qlab compare 10 sets the two side by side.",
	Notices: map[lab.Backend]string{lab.InMem: "No worker sleeps or moves a message: a failing worker hands it back with a decision, " +
		"and here in memory each retry becomes a time.AfterFunc timer (1 s, then 2 s) that brings it to the next worker, then the DLQ and its alert. " +
		"The waiting task sits in this process's memory, in no queue: a crash loses it. On the broker (qlab run 10) the same decisions reject into TTL wait queues; qlab compare 10 sets the two side by side."},
	InMem:      runQ10,
	Rabbit:     runQ10,
	Faults:     true, // in the fault suite (lessons/faults)
	Default:    lab.Rabbit,
	TestSpeed:  4,                               // the 1 s and 2 s waits take 250 and 500 ms
	Parity:     lesson.Parity{ExactTimes: true}, // each retry waits its queue's TTL, in memory and on the broker
	Scales:     true,
	Topologies: func() []flow.Topology { return []flow.Topology{q10Topology} },
}

// Seed 001's queues for the RabbitMQ half, as the seed spells them.
const (
	q10Main        = "sequential.queue"
	q10RetryWait   = "sequential.retry.wait"
	q10Retry       = "sequential.retry.processing"
	q10SecondWait  = "sequential.second.retry.wait"
	q10SecondRetry = "sequential.second.retry.processing"
	q10DLQ         = "sequential.dlq"
)

// q10Topology: each processing queue dead-letters (on a reject) into a
// wait queue, whose TTL dead-letters into the next processing queue; the
// last one dead-letters into the DLQ.
//
//	sequential.queue ─reject→ retry.wait (1s) ─TTL→ retry.processing ─reject→ second.retry.wait (2s) ─TTL→ second.retry.processing ─reject→ dlq
var q10Topology = flow.Topology{Queues: []flow.Queue{
	{Name: q10Main, Role: flow.Work, DeadLetterTo: q10RetryWait},
	{Name: q10RetryWait, Role: flow.Wait, TTL: time.Second, DeadLetterTo: q10Retry},
	{Name: q10Retry, Role: flow.Work, DeadLetterTo: q10SecondWait},
	{Name: q10SecondWait, Role: flow.Wait, TTL: 2 * time.Second, DeadLetterTo: q10SecondRetry},
	{Name: q10SecondRetry, Role: flow.Work, DeadLetterTo: q10DLQ},
	{Name: q10DLQ, Role: flow.DLQ},
}}

// q10MailLatency is how long the mock mail service takes per alert, on
// both backends (as in Q09).
const q10MailLatency = q09.MailLatency

func runQ10(ctx context.Context, env *lesson.Env) error {
	b, err := env.Open(ctx)
	if err != nil {
		return err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, q10Topology); err != nil {
		return err
	}
	for _, c := range q10Consumers(env) {
		if err := b.Consume(ctx, c); err != nil {
			return err
		}
	}
	defer env.InterruptOn(b)()
	err = env.Produce(ctx, func(id string) error { return b.Publish(ctx, "Producer", q10Main, id) })
	if err != nil {
		return err
	}
	return b.Wait(ctx)
}

// q10Consumers are the lesson's workers. Each processing worker makes one
// attempt and, on failure, decides where the message goes next; the
// DLQ-Worker mails an alert about what arrives there.
func q10Consumers(env *lesson.Env) []flow.Consumer {
	// Each step of the chain is the shared policy (flow.Retries): a
	// failure goes on to the next wait queue, and the last step parks it.
	attempt := func(actor string, policy flow.Retries) flow.Handler {
		return policy.Handler(func(ctx context.Context, d *flow.Delivery) error {
			return env.Stream.Attempt(d.Event(actor), func() error { return env.Work(ctx, d.Task, d.Attempt) })
		})
	}
	mailer := inmem.Mailer{Stream: env.Stream, Latency: q10MailLatency}
	dlqWorker := env.Worker("DLQ")
	alert := func(_ context.Context, d *flow.Delivery) flow.Decision {
		env.Stream.Emit(lab.Event{Kind: lab.Received, Task: d.Task, Queue: d.Queue, Actor: dlqWorker})
		mailer.Send(d.Task, inmem.DLQAlert(d.Task))
		return flow.Ack()
	}
	var cs []flow.Consumer
	for i := range env.Consumers {
		actor := lesson.WorkerName(env.Worker("Sequential"), i, env.Consumers)
		cs = append(cs, flow.Consumer{Queue: q10Main, Actor: actor, Handle: attempt(actor, flow.Retries{Via: q10RetryWait})})
	}
	retry, second := env.Worker("Retry"), env.Worker("Second-Retry")
	return append(cs,
		flow.Consumer{Queue: q10Retry, Actor: retry, Handle: attempt(retry, flow.Retries{Via: q10SecondWait})},
		flow.Consumer{Queue: q10SecondRetry, Actor: second, Handle: attempt(second, flow.Retries{DLQ: q10DLQ,
			GaveUp: func(int) string { return "failed all retries" }})},
		flow.Consumer{Queue: q10DLQ, Actor: dlqWorker, Handle: alert},
	)
}

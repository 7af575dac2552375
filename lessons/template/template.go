// Package template is a lesson to copy, the one CONTRIBUTING.md quotes:
// cp -r lessons/template lessons/qNN, then rename the package, the ID and
// the queues. It builds and runs on both backends as it is.
//
// Notice: C fails every attempt. Each failure goes round a wait queue
// whose TTL brings it back a second later, and its third failure parks it
// in the DLQ. A, B and D never wait for it.
package template

import (
	"context"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	// the broker mechanism env.Open uses
	_ "github.com/queuelab/qlab/lesson/rabbitenv"
)

// Lesson is the lesson's entry for the registry, lessons.All.
var Lesson = lesson.Lesson{
	ID:    "Q99", // QNN: its number, two digits
	Title: "A template: retry through a wait queue, then the DLQ",
	Notice: "C fails every attempt: each failure waits 1 s in " +
		"template.wait, whose TTL sends it back to template.queue, " +
		"and the third parks it in template.dlq. " +
		"A, B and D never wait for it.",
	InMem:  run,
	Rabbit: run,
	// the broker tests' pace: the 1 s wait takes 250 ms
	TestSpeed: 4,
	// each retry waits the TTL on both backends
	Parity:     lesson.Parity{ExactTimes: true},
	Topologies: func() []flow.Topology { return []flow.Topology{topology} },
}

// The lesson's queues: a work queue, a wait queue nobody consumes, a DLQ.
const (
	mainQueue   = "template.queue"
	waitQueue   = "template.wait"
	dlq         = "template.dlq"
	maxAttempts = 3
)

// topology: a rejected message waits out template.wait's TTL, then goes
// back to template.queue. On RabbitMQ the broker does that with
// dead-letter routes; in memory a timer does.
var topology = flow.Topology{Queues: []flow.Queue{
	{Name: mainQueue, Role: flow.Work, DeadLetterTo: waitQueue},
	{Name: waitQueue, Role: flow.Wait, TTL: time.Second,
		DeadLetterTo: mainQueue},
	{Name: dlq, Role: flow.DLQ},
}}

// run is the lesson on either backend: open it, declare the topology,
// start the worker, publish the plan's tasks, wait until each is decided.
func run(ctx context.Context, env *lesson.Env) error {
	b, err := env.Open(ctx)
	if err != nil {
		return err
	}
	// stops the consumers; a broker run deletes its queues
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, topology); err != nil {
		return err
	}
	// Sequential-Worker, or Sequential-Rabbit-Worker
	actor := env.Worker("Sequential")
	policy := flow.Retries{Via: waitQueue, DLQ: dlq, Max: maxAttempts}
	work := func(ctx context.Context, d *flow.Delivery) error {
		return env.Stream.Attempt(d.Event(actor), func() error {
			return env.Work(ctx, d.Task, d.Attempt)
		})
	}
	err = b.Consume(ctx, flow.Consumer{Queue: mainQueue, Actor: actor,
		Handle: policy.Handler(work)})
	if err != nil {
		return err
	}
	defer env.InterruptOn(b)() // the planned crash qlab compare measures
	err = env.Produce(ctx, func(task string) error {
		return b.Publish(ctx, "Producer", mainQueue, task)
	})
	if err != nil {
		return err
	}
	return b.Wait(ctx)
}

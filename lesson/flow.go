package lesson

import (
	"context"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
)

// A lesson that runs on both backends is written once on the flow seam:
// it opens the run's backend with env.Open, declares its topology, starts
// its consumers (each a flow.Handler returning a flow.Decision), publishes
// and waits. The backend supplies the mechanism.

// SessionSettle bounds a run's clean-up, whatever happened to its context:
// long enough for a broker slowed by a room of runs to answer its
// deletes (10 s was not, at 300 runs on two cores), and for one stopped
// about as long as a run waits for it (rabbit.DefaultGiveUpAfter, 30 s)
// to be back in time for them: a node restarts in 5-20 s on RabbitMQ
// 3.10.8 here.
const SessionSettle = 20 * time.Second

// flowRoom is the room of every in-memory queue of a flow lesson: far more
// than any lesson keeps in one queue, so a put never blocks a worker.
const flowRoom = 1024

// Open starts the run's flow backend: a fresh in-memory flow, or one on a
// RabbitMQ session under the run's queue names (the mechanism registered
// for the run's backend). Close it with env.Close.
func (e *Env) Open(ctx context.Context) (flow.Backend, error) {
	m, err := mechanism(e.Stream.Backend())
	if err != nil {
		return nil, err
	}
	return m.Open(ctx, e)
}

// Close ends backend b whatever happened to ctx, bounded by
// SessionSettle: the consumers stop and a broker run deletes its queues
// (reporting what they still held as lost). A clean-up that failed is not
// dropped: the run's end tries again and its error names what is left
// (Mechanism.Leftovers, Run).
func (e *Env) Close(ctx context.Context, b flow.Backend) {
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), SessionSettle)
	defer cancel()
	if err := b.Close(cleanup); err != nil {
		e.Log().Warn("lesson: the clean-up left something behind; the run tries again at its end", "err", err.Error())
		e.mu.Lock()
		e.closeErrs = append(e.closeErrs, err)
		e.mu.Unlock()
	}
}

// InterruptOn arms the run's planned failure (Env.InterruptAfter) on b, if
// b can have its process die (flow.Interrupter); a backend that cannot is
// left alone. Call the returned stop when the workers are done.
func (e *Env) InterruptOn(b flow.Backend) (stop func()) {
	in, ok := b.(flow.Interrupter)
	if !ok {
		return func() {}
	}
	return e.InterruptAfter(in.Interrupt)
}

// Declare declares topo on b, lists it in the run's tables on the broker
// (once per run: a lesson in phases declares it again for each), and lets
// the run sample every queue's depth.
func (e *Env) Declare(ctx context.Context, b flow.Backend, topo flow.Topology) error {
	if err := b.Declare(ctx, topo); err != nil {
		return err
	}
	if m, _ := mechanism(b.Kind()); m.Declared != nil && !e.topologyShown {
		e.topologyShown = true
		e.Report(m.Declared(b, topo))
	}
	in, ok := b.(flow.Inspector)
	if !ok {
		return nil
	}
	for _, q := range topo.Queues {
		e.Watch(q.Name, func(ctx context.Context) (int, error) { return in.Depth(ctx, q.Name) })
	}
	return nil
}

// Worker is the seed's name for the worker called base on this run's
// backend: "Retry-Worker" in memory, "Retry-Rabbit-Worker" on RabbitMQ
// (seed 001 names them so).
func (e *Env) Worker(base string) string {
	if e.Stream.Backend() == lab.Rabbit {
		return base + "-Rabbit-Worker"
	}
	return base + "-Worker"
}

// Work is the plan's simulated work for one attempt of task: it takes
// Plan.WorkTime of lesson time, then fails as Plan.Fails says.
func (e *Env) Work(ctx context.Context, task string, attempt int) error {
	if err := e.Stream.Clock().Wait(ctx, e.Plan.WorkTime(task, attempt)); err != nil {
		return err
	}
	return e.Plan.Fails(task, attempt)
}

// Phase marks the start of one part of a lesson that runs in several
// (Q12: without, then with a breaker), for every renderer.
func (e *Env) Phase(title string) {
	e.Stream.Emit(lab.Event{Kind: lab.Phase, Actor: "lab", Note: title})
}

// Produce calls publish for each of the plan's tasks in order: all at
// once, or one every Plan.Every of lesson time. It stops at the first
// error or when ctx ends.
func (e *Env) Produce(ctx context.Context, publish func(task string) error) error {
	for i, id := range e.Plan.Tasks {
		if i > 0 && e.Plan.Every > 0 {
			if err := e.Stream.Clock().Wait(ctx, e.Plan.Every); err != nil {
				return err
			}
		}
		if err := publish(id); err != nil {
			return err
		}
	}
	return nil
}

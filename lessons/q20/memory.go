package q20

import (
	"context"
	"errors"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/seeds/birthday"
)

// crashInMemory is a part in one process: the queue a Go channel, the
// worker a loop, the store a map. The crash (when every message reached
// its step, or earlier when life ends: the run's planned interrupt) ends
// all of it: no broker hands a message out again, no store remembers
// which rows were SENT, and what was not sent is lost.
func crashInMemory(ctx, life context.Context, env *lesson.Env, p policy) (outcome, error) {
	db, err := runstore.Open(ctx, env, "crash_"+p.prefix)
	if err != nil {
		return outcome{}, err
	}
	defer db.Drop()
	pt := newPart(env, p, db)
	if err := pt.insert(ctx); err != nil {
		return outcome{}, err
	}
	window := make(chan string, Prefetch) // the worker's hands: prefetch 5
	for _, id := range p.ids() {
		env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: birthday.Queue, Actor: Scheduler,
			Note: "a Go channel in this process's memory"})
		window <- id
	}
	close(window)
	alive, die := context.WithCancel(life)
	defer die()
	steps, clock, say := pt.steps(), env.Stream.Clock(), pt.relay(Crashing)
	for id := range window {
		err := work(alive, db, id, steps[id], clock.Wait, say)
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			break // the planned interrupt came first: the crash is now
		}
		if err != nil {
			return outcome{}, err
		}
	}
	env.Phase(killTitle(p, 0))
	die() // the crash
	o, err := pt.finish(ctx, false)
	for _, id := range p.ids() {
		if o.sends[id] > 0 {
			continue
		}
		env.Stream.Emit(lab.Event{Kind: lab.Lost, Task: id, Queue: birthday.Queue, Actor: Crashing,
			Note: "the process died holding it: no broker to hand it out again, and the map " +
				"that knew its row died too"})
	}
	return o, err
}

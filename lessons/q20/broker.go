package q20

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/birthday"
)

// crashProcess is a part on the broker: the crashing worker is a process
// of its own on the same queue and the same SQL store; it is killed with
// SIGKILL once it holds its five messages at their steps, and the
// surviving worker, here, gets them redelivered.
func crashProcess(ctx context.Context, env *lesson.Env, p policy) (outcome, error) {
	db, err := runstore.Open(ctx, env, "crash_"+strings.ToLower(p.prefix))
	if err != nil {
		return outcome{}, err
	}
	defer db.Drop()
	b, err := env.Open(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, birthday.Topology()); err != nil {
		return outcome{}, err
	}
	defer env.InterruptOn(b)() // the run's planned cut of this process's consumers
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return outcome{}, err
	}
	pt := newPart(env, p, db)
	if err := pt.insert(ctx); err != nil {
		return outcome{}, err
	}
	cfg := workerConfig{AMQP: s.URL, Names: s.Names, Store: db.Config, Prefetch: Prefetch,
		Steps: pt.steps(), Speed: env.Stream.Clock().Speed()}
	proc, err := startWorker(cfg)
	if err != nil {
		return outcome{}, err
	}
	defer proc.kill() // whatever happens: no orphan
	for _, id := range p.ids() {
		if err := b.PublishTo(ctx, Scheduler, birthday.Exchange, "birthday", id); err != nil {
			return outcome{}, err
		}
	}
	if err := pt.follow(ctx, proc, holdBound+cfg.workTime()); err != nil {
		return outcome{}, err
	}
	c := flow.Consumer{Queue: birthday.Queue, Actor: Survivor, Prefetch: Prefetch, Handle: pt.survivor()}
	if err := b.Consume(ctx, c); err != nil {
		return outcome{}, err
	}
	env.Phase(killTitle(p, proc.Pid()))
	if err := proc.kill(); err != nil {
		return outcome{}, err
	}
	if err := b.Wait(ctx); err != nil {
		return outcome{}, err
	}
	o, err := pt.finish(ctx, true)
	o.pid, o.exit = proc.Pid(), proc.exit()
	return o, err
}

// follow relays the worker process's progress as events until it says it
// holds every message at its step, within bound (real time).
func (pt *part) follow(ctx context.Context, proc *process, bound time.Duration) error {
	say := pt.relay(fmt.Sprintf("%s pid %d", Crashing, proc.Pid()))
	timeout := time.After(bound)
	for {
		select {
		case line, ok := <-proc.lines:
			if !ok {
				return proc.errWorker("it held its messages")
			}
			what, id, _ := strings.Cut(line, " ")
			if what == sayHolding {
				return nil
			}
			say(what, id)
		case <-timeout:
			return fmt.Errorf("%w within %s", errNoHold, bound)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// killTitle is the phase that marks the kill in the stream: the process,
// the signal, and the messages it holds unacked at that moment (pid 0:
// in memory, where the crash is this process's own).
func killTitle(p policy, pid int) string {
	held := fmt.Sprintf("%s1–%s5", p.prefix, p.prefix)
	if pid == 0 {
		return fmt.Sprintf("The crash: this process dies while %s holds %s; the Go channel "+
			"and the map store die with it", Crashing, held)
	}
	return fmt.Sprintf("SIGKILL: %s, process %d, is killed holding %s unacked; no handler "+
		"runs, the kernel closes its socket", Crashing, pid, held)
}

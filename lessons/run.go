package lessons

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// Options choose how a lesson runs.
type Options struct {
	Backend lab.Backend // default lab.InMem
	Speed   float64     // lesson time per real time; default 1
	Plan    *lab.Plan   // default lab.DefaultPlan()
	Broker  string      // AMQP URL, for the RabbitMQ backend
	// SeedNames makes RabbitMQ lessons declare the seed's exact queue
	// names instead of a private per-run prefix (qlab run --names seed).
	SeedNames bool
}

// Result is what a finished run leaves besides its events.
type Result struct {
	Tasks  []lab.TaskRecord // every task the run created, with its fate
	Tables []render.Table   // measured tables the lesson reported
}

// ErrNoBackend is returned by Run for a backend the lesson does not have.
type ErrNoBackend struct {
	Lesson  Lesson
	Backend lab.Backend
}

func (e ErrNoBackend) Error() string {
	return fmt.Sprintf("lesson %d has no %s variant (it runs on: %v)", e.Lesson.Number(), e.Backend, e.Lesson.Backends())
}

// Run runs lesson l, sending every event to sinks, and always ends the
// stream with one summary per task, even when the lesson fails or ctx is
// cancelled. The error is the lesson's (or ErrNoBackend).
func Run(ctx context.Context, l Lesson, opts Options, sinks ...lab.Sink) (Result, error) {
	if opts.Backend == "" {
		opts.Backend = lab.InMem
	}
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	run := l.Runner(opts.Backend)
	if run == nil {
		return Result{}, ErrNoBackend{l, opts.Backend}
	}
	plan := lab.DefaultPlan()
	if opts.Plan != nil {
		plan = *opts.Plan
	}
	env := &Env{
		Stream: lab.NewStream(l.Slug(), opts.Backend, lab.NewClock(opts.Speed), sinks...),
		Plan:   plan,
		Broker: opts.Broker,
	}
	env.SeedNames = opts.SeedNames
	err := run(ctx, env)
	return Result{Tasks: env.Stream.Finish(), Tables: env.tables}, err
}

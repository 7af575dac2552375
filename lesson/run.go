package lesson

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// Options choose how a lesson runs: the one options type of a run, which
// the lesson reads back through its Env.
type Options struct {
	Backend lab.Backend // default: the lesson's (Lesson.DefaultBackend)
	Speed   float64     // lesson time per real time; default 1
	Plan    *lab.Plan   // default lab.DefaultPlan()
	Broker  string      // AMQP URL, for the RabbitMQ backend
	// Names, when set, are the broker names the run declares under (the
	// run API's choice for --names and --prefix, or a test that prepared
	// queues of its own); unset, a broker run takes a fresh private prefix.
	Names *Names
	// Interrupt, when > 0, makes the process "die" this long (lesson time)
	// after the lesson's workers start, in lessons that support it: in
	// memory that loses what memory held; on a broker the workers'
	// connections drop and come back. Lessons that support it call
	// Env.Interrupted when it happened.
	Interrupt time.Duration
	// Consumers on the main queue, for lessons that support more than one
	// (at least 1; 0 means 1).
	Consumers int
	// Sample, when > 0, samples every watched queue's depth at this
	// lesson-time interval into Result.Depths.
	Sample time.Duration
	// Pause, when set, holds the lesson's time while it is held (the TUI's
	// pause key): see lab.Clock.WithPause.
	Pause *lab.Pause
	// Keep leaves a broker run's queues, exchanges and the messages in
	// them on the broker when it ends (qlab run --keep), for qlab dlq to
	// practise on; they stay under the run's own names, and qlab broker
	// clean --prefix removes them. A task still in one ends pending.
	Keep bool
	// GiveUpAfter, when > 0, is how long (real time) a broker run waits
	// for a broker that went away before it ends, every unfinished task
	// lost with the reason; default the broker package's own.
	GiveUpAfter time.Duration
	// Database, when set, is the status store's URL for the lessons with
	// one (Q18, Q20, Q23, Q24: sqlstore.Config.URL) in place of
	// QLAB_DATABASE_URL, so that concurrent runs in one process (the fault
	// suite's) can each have a database of their own. Empty: the
	// environment's, else the embedded SQLite.
	Database string
	// Stores, when set, gets every status store the run opens
	// (lessons/runstore), for a viewer to read their counts as the run
	// goes: the TUI's store panel.
	Stores *Stores
	// Act, when set, carries the student's presses of the lesson's action
	// keys (Lesson.Actions) from the TUI: the lesson then waits for them
	// where it would act on its own (Q21 stops the leader's node when the
	// student presses k), each wait still bounded. Nil: the lesson acts on
	// its own, as qlab run and the tests run it. A lesson without Actions
	// ignores it.
	Act <-chan Act
	// Logger gets what a backend has to say outside the event stream
	// (connection trouble). nil logs nothing.
	Logger *slog.Logger
	// Quorum makes a broker run declare every queue as a quorum queue
	// (x-queue-type quorum), whatever the lesson's topology says, so a
	// classic lesson can run on a cluster and survive a node stopping
	// (the fault suite's node group runs Q10 so). The in-memory backend
	// ignores it.
	Quorum bool
	// Deliveries, when set, sees every delivery of a task a broker run's
	// readers accepted, with the headers the broker put on it (qlab
	// compare --broker sets the two brokers' x-death and x-delivery-count
	// side by side). It is called from the readers' goroutines: it must be
	// safe for concurrent use. The in-memory backend never calls it.
	Deliveries func(Carried)
	// Brief makes a lesson measure less: for a suite that checks the event
	// stream and the tables' shape, not the figures. A brief run keeps
	// every part, table and kind of event of the full one, on fewer
	// messages. A lesson without measurements ignores it.
	Brief bool
}

// Carried is one delivery a broker made, as Options.Deliveries sees it.
type Carried struct {
	Queue       string         // the seed name of the queue it came from
	Task        string         // its message id: the task
	Redelivered bool           // the broker's redelivered flag
	Headers     map[string]any // the AMQP headers as delivered; read, never write
}

// Names are the broker names a run declares under: every queue and
// exchange carries Prefix ("" for the seed's own names), and Run marks the
// run's messages (their app-id). It is rabbit.Names, field for field;
// package lesson keeps its own so that it need not import the broker.
type Names struct {
	Prefix string
	Run    string
}

// Log is the run's logger, never nil.
func (o Options) Log() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Result is what a finished run leaves besides its events.
type Result struct {
	Tasks  []lab.TaskRecord // every task the run created, with its fate
	Tables []render.Table   // measured tables the lesson reported
	// Depths holds each watched queue's sampled depths, in the order the
	// lesson registered them (only with Options.Sample).
	Depths []Series
	// Interrupted is true when the lesson carried out Options.Interrupt.
	Interrupted bool
	// InterruptedAt is when it did, in lesson time from the run's start
	// (the events' TMs). Options.Interrupt counts from when the lesson
	// armed it, once its workers ran, so the two differ by the set-up.
	InterruptedAt time.Duration
	// Missed is how many events readers that fell behind lost (sinks
	// wrapped in lab.Bounded); the tasks and summaries are complete.
	Missed int
}

// Series is one queue's depth, sampled at a fixed interval.
type Series struct {
	Queue   string
	Samples []int
	// At is the lesson time each sample's probe started: on a loaded
	// machine the interval slips, so a short wait may fall between two.
	At []time.Duration
	// Until is the lesson time each probe returned: the broker read the
	// depth somewhere between At and Until, which on a loaded machine can
	// be longer apart than a short wait lasts.
	Until []time.Duration
}

// ErrNoBackend is returned by Run for a backend the lesson does not have.
type ErrNoBackend struct {
	Lesson  Lesson
	Backend lab.Backend
}

// Error names the lesson, the missing backend and the ones it has.
func (e ErrNoBackend) Error() string {
	var has []string
	for _, b := range e.Lesson.Backends() {
		has = append(has, string(b))
	}
	return fmt.Sprintf("lesson %d has no %s variant (it runs on: %s)", e.Lesson.Number(), e.Backend, strings.Join(has, ", "))
}

// Run runs lesson l, sending every event to sinks, and always ends the
// stream with one summary per task, even when the lesson fails or ctx is
// cancelled. The error is the lesson's (or ErrNoBackend).
func Run(ctx context.Context, l Lesson, opts Options, sinks ...lab.Sink) (Result, error) {
	if opts.Backend == "" {
		opts.Backend = l.DefaultBackend()
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
	opts.Consumers = max(opts.Consumers, 1)
	env := &Env{
		Options: opts,
		Stream:  lab.NewStream(l.Slug(), opts.Backend, lab.NewClock(opts.Speed).WithPause(opts.Pause), sinks...),
		Plan:    plan,
	}
	env.Stream.Reserve(len(plan.Tasks)) // a plan's tasks: the ledger never grows on the way
	stopSampling := env.sample(ctx, opts.Sample)
	err := env.leftovers(ctx, run(ctx, env))
	depths := stopSampling()
	env.mu.Lock()
	defer env.mu.Unlock()
	tasks := env.Stream.Finish()
	return Result{Tasks: tasks, Tables: env.tables, Depths: depths, Interrupted: env.interrupted,
		InterruptedAt: env.interruptedAt, Missed: env.Stream.Missed()}, err
}

// leftovers adds to the lesson's error what the run left behind: the
// mechanism's account (Mechanism.Leftovers), or the clean-ups' errors.
// Both stay on one line.
func (e *Env) leftovers(ctx context.Context, err error) error {
	var left error
	if m, _ := mechanism(e.Stream.Backend()); m.Leftovers != nil {
		left = m.Leftovers(context.WithoutCancel(ctx), e)
	} else {
		e.mu.Lock()
		left = errors.Join(e.closeErrs...)
		e.mu.Unlock()
	}
	switch {
	case left == nil:
		return err
	case err == nil:
		return left
	}
	return fmt.Errorf("%w; and %w", err, left)
}

// sample reads every watched queue's depth each interval of lesson time
// until the returned stop is called; stop returns the series. A probe that
// errors (the queue is gone) records 0. interval 0 samples nothing.
func (e *Env) sample(ctx context.Context, interval time.Duration) (stop func() []Series) {
	if interval <= 0 {
		return func() []Series { return nil }
	}
	done := make(chan struct{})
	result := make(chan []Series)
	go func() {
		var series []Series
		tick := time.NewTicker(e.Stream.Clock().Real(interval))
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				e.mu.Lock()
				probes := append([]probe(nil), e.probes...)
				e.mu.Unlock()
				for i, p := range probes {
					if i == len(series) {
						series = append(series, Series{Queue: p.queue})
					}
					at := e.Stream.Clock().Elapsed()
					n, err := p.depth(ctx)
					if err != nil {
						n = 0
					}
					series[i].Samples = append(series[i].Samples, n)
					series[i].At = append(series[i].At, at)
					series[i].Until = append(series[i].Until, e.Stream.Clock().Elapsed())
				}
			case <-done:
				result <- series
				return
			}
		}
	}()
	return func() []Series {
		close(done)
		return <-result
	}
}

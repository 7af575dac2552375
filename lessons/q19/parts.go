package q19

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/birthday"
)

// attemptRow is one attempt as the worker saw it.
type attemptRow struct {
	task        string
	attempt     int           // flow's count (the lab's header on a broker)
	at          time.Duration // lesson time it started, from the part's start
	err         error
	count       int  // the retry count the message carried
	redelivered bool // the broker's redelivered flag
}

// attemptLog collects attempts from every worker.
type attemptLog struct {
	start time.Duration // lesson time the part's load was published; set before
	mu    sync.Mutex
	rows  []attemptRow
}

func (l *attemptLog) add(r attemptRow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, r)
}

func (l *attemptLog) all() []attemptRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]attemptRow(nil), l.rows...)
}

// job is one message of a load: the error its attempts return, and how
// many of them (0: every attempt).
type job struct {
	id    string
	err   error
	times int
}

// classified is part (a)'s load: one of each error class.
var classified = []job{
	{"N1", birthday.ErrNetwork, 2},
	{"T1", birthday.ErrTimeout, 1},
	{"L1", birthday.ErrRateLimit, 0},
	{"V1", birthday.ErrValidation, 0},
	{"F1", birthday.ErrNotFound, 0},
	{"A1", birthday.ErrAuth, 0},
}

// classify is part (a): every class of error through the seed's policy,
// the delays through TTL wait queues.
func classify(ctx context.Context, env *lesson.Env) error {
	env.Phase("(a) N1 T1 L1 V1 F1 A1: transient errors back off 2–32 s, permanent ones park")
	log, err := runLoad(ctx, env, ids(classified), classifiedFails(), waitQueues)
	if err != nil {
		return err
	}
	env.Report(classifyTable(log))
	return nil
}

// classifiedFails is part (a)'s failure plan: each job's error, on the
// attempts its times says.
func classifiedFails() func(string, int, time.Duration) error {
	return func(task string, attempt int, _ time.Duration) error {
		for _, j := range classified {
			if j.id == task && (j.times == 0 || attempt <= j.times) {
				return j.err
			}
		}
		return nil
	}
}

func ids(js []job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.id)
	}
	return out
}

// strategy is how a worker waits out a transient failure.
type strategy struct {
	name string
	// consumers are the workers the strategy starts, given the handler
	// maker.
	consumers func(handle func(actor string) flow.Handler) []flow.Consumer
	// handler is the verdict on one delivery.
	handler func(w *worker, actor string) flow.Handler
}

// waitQueues is part (a)'s way: the worker (prefetch 5) counts retries in
// its own header and sends a failure into the wait queue of its delay.
var waitQueues = strategy{
	name: "TTL wait queues",
	consumers: func(handle func(string) flow.Handler) []flow.Consumer {
		return []flow.Consumer{{Queue: birthday.Queue, Actor: "Worker", Prefetch: birthday.Prefetch,
			RetryHeader: rabbit.RetryCountHeader, Handle: handle("Worker")}}
	},
	handler: func(w *worker, actor string) flow.Handler {
		return func(ctx context.Context, d *flow.Delivery) flow.Decision {
			return birthday.Decide(d, w.attempt(ctx, d, actor))
		}
	},
}

// timerNack is the seed's "NACK + requeue with delay" as people fake it:
// wait out the delay holding the message, then nack it with requeue. The
// seed's consumer runs up to five handlers at once (prefetch 5); here that
// is five workers of one slot each, so a held message holds a slot.
var timerNack = strategy{
	name: "timer, then nack + requeue",
	consumers: func(handle func(string) flow.Handler) []flow.Consumer {
		var cs []flow.Consumer
		for i := range birthday.Prefetch {
			actor := fmt.Sprintf("Slot-%d", i+1)
			cs = append(cs, flow.Consumer{Queue: birthday.Queue, Actor: actor, Prefetch: 1,
				Handle: handle(actor)})
		}
		return cs
	},
	handler: func(w *worker, actor string) flow.Handler {
		return func(ctx context.Context, d *flow.Delivery) flow.Decision {
			err := w.attempt(ctx, d, actor)
			if err == nil || flow.IsPermanent(err) {
				return birthday.Decide(d, err)
			}
			retries := headerCount(d) // a requeue changes no header: always what was published
			if retries >= birthday.MaxRetries {
				return birthday.Decide(d, err)
			}
			_ = flow.WaitFor(ctx, w.b, w.clock, birthday.Delay(retries)) // the slot stays taken; cancelled, requeue now
			return flow.Requeue()
		}
	},
}

// publishTime is the lesson time between two publishes of a load: not a
// divisor of sendTime, so no two workers finish at the same instant (which
// would make the order of a transcript a coin toss).
const publishTime = 30 * time.Millisecond

// runLoad publishes tasks (in order, publishTime apart) to a fresh backend
// whose workers follow st, and returns every attempt once all are settled.
func runLoad(ctx context.Context, env *lesson.Env, tasks []string,
	fails func(task string, attempt int, at time.Duration) error, st strategy) ([]attemptRow, error) {
	b, err := open(ctx, env)
	if err != nil {
		return nil, err
	}
	defer env.Close(ctx, b)
	w := &worker{env: env, b: b, clock: env.Stream.Clock(), fails: fails, log: &attemptLog{}}
	handle := func(actor string) flow.Handler { return st.handler(w, actor) }
	for _, c := range st.consumers(handle) {
		if err := b.Consume(ctx, c); err != nil {
			return nil, err
		}
		// Let it start waiting before the next: the slots take the
		// messages in turn, in a fixed order (and in memory, every run).
		if err := w.clock.Wait(ctx, time.Millisecond); err != nil {
			return nil, err
		}
	}
	w.log.start = w.clock.Elapsed()
	defer env.InterruptOn(b)()
	for i, task := range tasks {
		if i > 0 { // a publish takes its time: the messages reach the slots one by one
			if err := w.clock.Wait(ctx, publishTime); err != nil {
				return nil, err
			}
		}
		if err := b.PublishTo(ctx, "Minute-Scheduler", birthday.Exchange, "birthday", task); err != nil {
			return nil, err
		}
	}
	if err := b.Wait(ctx); err != nil {
		return w.log.all(), err
	}
	return w.log.all(), nil
}

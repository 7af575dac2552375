package q17

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

// worker is one consumer of email-queue: its own channel with a prefetch,
// a handler that takes work (lesson time) per job, and concurrency
// handlers at once (1: the delivery loop itself runs the handler, as
// amqp091-go's examples do; more: a goroutine per delivery, at most that
// many).
type worker struct {
	name        string
	prefetch    int // basic.qos prefetch-count; 0 is unlimited
	work        time.Duration
	concurrency int

	got     atomic.Int64 // deliveries handled
	arrived atomic.Int64 // deliveries that reached this process
	acked   atomic.Int64
	maxHeld atomic.Int64 // the most delivered-but-unacked at once: what the broker let it hold
	busy    atomic.Int64
	maxBusy atomic.Int64 // the most handlers running at once
}

// jobRun is one run of jobs through a set of workers.
type jobRun struct {
	workers []*worker
	jobs    int
	took    time.Duration // lesson time from the first publish to the last ack
}

// consume starts w on email-queue. Arrivals are counted the moment
// amqp091-go hands them over, before the handler runs, so maxHeld is what
// the broker pushed ahead of the acks, not what the handler happened to
// be doing. The handlers begin once begin is closed (runJobs: when every
// job is in). A message that is no task of the run is parked in the
// run's hold queue as it arrives (rabbit.Guest.Screen): no handler sees
// it and no count includes it.
func (w *worker) consume(ctx context.Context, env *lesson.Env, s *rabbit.Session, begin <-chan struct{}, done func()) (stop func(), err error) {
	ch, err := s.Connection().Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Qos(w.prefetch, 0 /* prefetchSize */, false /* global: per consumer */); err != nil {
		ch.Close()
		return nil, err
	}
	deliveries, err := ch.Consume(s.Names.Of(notify.EmailQueue), w.name, false /* autoAck */, false /* exclusive */, false /* noLocal */, false /* noWait */, nil)
	if err != nil {
		ch.Close()
		return nil, err
	}
	inbox := make(chan amqp.Delivery, 4096)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the arrival counter: drains amqp091-go's channel at once
		defer wg.Done()
		defer close(inbox)
		for d := range deliveries {
			if !s.Guest().Screen(ctx, notify.EmailQueue, d) {
				continue // moved to the run's hold queue: no job of the run, held by nobody
			}
			held := w.arrived.Add(1) - w.acked.Load()
			storeMax(&w.maxHeld, held)
			inbox <- d
		}
	}()
	slots := make(chan struct{}, max(w.concurrency, 1))
	wg.Add(1)
	go func() { // the delivery loop
		defer wg.Done()
		select {
		case <-begin:
		case <-ctx.Done():
		}
		var handlers sync.WaitGroup
		for d := range inbox {
			if w.concurrency <= 1 {
				w.handle(ctx, env, d, done)
				continue
			}
			slots <- struct{}{}
			handlers.Add(1)
			go func() {
				defer func() { <-slots; handlers.Done() }()
				w.handle(ctx, env, d, done)
			}()
		}
		handlers.Wait()
	}()
	// Stop consuming, let every handler finish its ack, then close: an ack
	// sent after channel.close reaches a broker that has closed the channel,
	// and it closes the whole connection (504 "expected 'channel.open'").
	return func() { _ = ch.Cancel(w.name, false); wg.Wait(); _ = ch.Close() }, nil
}

// handle runs one job: work, then ack.
func (w *worker) handle(ctx context.Context, env *lesson.Env, d amqp.Delivery, done func()) {
	storeMax(&w.maxBusy, w.busy.Add(1))
	defer w.busy.Add(-1)
	e := lab.Event{Task: d.MessageId, Queue: notify.EmailQueue, Actor: w.name, Attempt: 1}
	err := env.Stream.Attempt(e, func() error { return env.Stream.Clock().Wait(ctx, w.work) })
	if err != nil { // the run is ending: leave it unacked, the broker keeps it
		return
	}
	// Counted before the ack goes out: the broker may push the next job
	// the moment it reads the ack, before Ack returns.
	w.acked.Add(1)
	if d.Ack(false /* multiple */) == nil {
		w.got.Add(1)
		done()
	}
}

// storeMax raises m to v if v is larger.
func storeMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

// runJobs starts ws on email-queue, publishes jobs (ids prefix01…) with
// confirms, lets the workers begin, and waits until every job is acked or
// ctx ends.
func runJobs(ctx context.Context, env *lesson.Env, s *rabbit.Session, prefix string, jobs int, ws ...*worker) (jobRun, error) {
	run := jobRun{workers: ws, jobs: jobs}
	var acked atomic.Int64
	all := make(chan struct{})
	done := func() {
		if acked.Add(1) == int64(jobs) {
			close(all)
		}
	}
	// The workers begin once every job is confirmed, so what each holds
	// is what the broker dealt it, not a race between the publishes and
	// its first acks: on a loaded machine the slow worker, unlimited,
	// once acked jobs as fast as they came in and held only 9 at most.
	begin := make(chan struct{})
	for _, w := range ws {
		stop, err := w.consume(ctx, env, s, begin, done)
		if err != nil {
			return run, err
		}
		defer stop()
	}
	open := sync.OnceFunc(func() { close(begin) })
	defer open() // runs before the stops: a worker waiting to begin would hold them up
	pub, err := s.Publisher(ctx)
	if err != nil {
		return run, err
	}
	defer pub.Close()
	clock := env.Stream.Clock()
	start := clock.Elapsed()
	var pending []*amqp.DeferredConfirmation
	for i := 1; i <= jobs; i++ {
		task := fmt.Sprintf("%s%02d", prefix, i)
		env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: notify.EmailQueue, Actor: "Notification-API"})
		dc, err := pub.PublishAsync(ctx, notify.EmailQueue, task, notify.NewJob(task, time.Now()).Encode())
		if err != nil {
			return run, err
		}
		pending = append(pending, dc)
	}
	for _, dc := range pending {
		if err := rabbit.WaitConfirm(ctx, dc); err != nil {
			return run, err
		}
	}
	open()
	select {
	case <-all:
	case <-ctx.Done():
		return run, fmt.Errorf("%d of %d jobs acked: %w", acked.Load(), jobs, ctx.Err())
	}
	run.took = clock.Elapsed() - start
	return run, nil
}

// perMinute is a run's throughput in jobs per lesson minute.
func (r jobRun) perMinute() float64 {
	if r.took <= 0 {
		return 0
	}
	return float64(r.jobs) / r.took.Minutes()
}

package q19

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/birthday"
)

// Part (b) once more, on the seed's own queue type: seed 003 declares
// its queues quorum. The same five slots (prefetch 1 each) hold Q1–Q5 for
// a 2 s timer, then nack them with requeue, while QH waits behind them.
// Where the requeue puts a message decides H's wait, and that is the
// queue type's and the version's (rabbit.RequeuePlace): a quorum queue
// on 3.10.8 appends it, so QH gets the first slot freed. The run reads
// x-delivery-count on every delivery. It speaks AMQP itself, outside the
// lab's flow, so it adds no tasks the in-memory run lacks: its events are
// the phase and the table.

// stallQueue is the seed name of the quorum queue the load runs on.
const stallQueue = "birthday.messages.quorum"

// stallTopology is what quorumStall declares.
func stallTopology() flow.Topology {
	return flow.Topology{Queues: []flow.Queue{{Name: stallQueue, Role: flow.Work, Quorum: true}}}
}

// quorumStall runs the timer-then-nack load on a quorum queue of the
// run's broker and measures it as a row of the stall table.
func quorumStall(ctx context.Context, env *lesson.Env) (stalled, error) {
	m := stalled{name: "timer, then nack + requeue, quorum queue", healthy: "QH", firstH: -1,
		quorum: true, deliveryCount: -1}
	env.Phase(fmt.Sprintf("(b) Q1–Q5 rate-limited for %s, QH healthy: %s (the seed's queue type)",
		limitFor, m.name))
	b, err := env.Open(ctx)
	if err != nil {
		return m, err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, stallTopology()); err != nil {
		return m, err
	}
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return m, err
	}
	m.version = flow.FactsOf(b).Version
	clock := env.Stream.Clock()
	// Bounded in real time: the limit, H's send and a margin, at the
	// run's speed, plus what a loaded machine may add.
	ctx, cancel := context.WithTimeout(ctx, clock.Real(limitFor+10*time.Second)+30*time.Second)
	defer cancel()
	l := &quorumLoad{m: m, left: birthday.Prefetch + 1, done: make(chan struct{})}
	queue := s.Names.Of(stallQueue)
	for i := range birthday.Prefetch {
		ch, err := s.Connection().Channel()
		if err != nil {
			return m, err
		}
		defer func() { _ = ch.Close() }()
		if err := ch.Qos(1, 0, false); err != nil { // prefetchSize, global
			return m, err
		}
		ds, err := ch.ConsumeWithContext(ctx, queue, fmt.Sprintf("Slot-%d", i+1),
			false, false, false, false, nil) // autoAck, exclusive, noLocal, noWait
		if err != nil {
			return m, err
		}
		go l.slot(ctx, clock, ds)
		if err := clock.Wait(ctx, time.Millisecond); err != nil { // the slots take them in turn
			return m, err
		}
	}
	l.start = clock.Elapsed()
	if err := publishLoad(ctx, s, queue, clock); err != nil {
		return m, err
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return l.result(), fmt.Errorf("q19: the quorum queue's load never settled: %w", ctx.Err())
	}
	return l.result(), nil
}

// publishLoad publishes Q1–Q5 and QH, publishTime apart, each confirmed.
func publishLoad(ctx context.Context, s *rabbit.Session, queue string, clock lab.Clock) error {
	ch, err := s.Connection().Channel()
	if err != nil {
		return err
	}
	defer func() { _ = ch.Close() }()
	if err := ch.Confirm(false); err != nil { // noWait
		return err
	}
	for i := range birthday.Prefetch + 1 {
		task := "QH"
		if i < birthday.Prefetch {
			task = fmt.Sprintf("Q%d", i+1)
		}
		if i > 0 {
			if err := clock.Wait(ctx, publishTime); err != nil {
				return err
			}
		}
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, // mandatory, immediate
			amqp.Publishing{MessageId: task, Body: []byte(task), DeliveryMode: amqp.Persistent})
		if err != nil {
			return err
		}
		if ok, err := c.WaitContext(ctx); err != nil || !ok {
			return errors.Join(fmt.Errorf("q19: %s not confirmed", task), err)
		}
	}
	return nil
}

// quorumLoad is the load's state, shared by the five slots.
type quorumLoad struct {
	start time.Duration // lesson time the first publish left

	mu   sync.Mutex
	m    stalled
	left int           // messages not yet acked
	done chan struct{} // closed when left reaches 0
}

// slot is one of the five handlers: QH is sent at once; Q1–Q5 fail
// while the limit lasts, hold the slot for the first delay (their retry
// count, read from the message, never grows: 2 s each time), then nack.
func (l *quorumLoad) slot(ctx context.Context, clock lab.Clock, ds <-chan amqp.Delivery) {
	for d := range ds {
		at := clock.Elapsed() - l.start
		n, ok := rabbit.HeaderCount(d.Headers, rabbit.DeliveryCountHeader)
		if !ok {
			n = -1 // the broker wrote none
		}
		l.see(d.MessageId, at, d.Redelivered, n)
		if clock.Wait(ctx, sendTime) != nil {
			return
		}
		if d.MessageId != "QH" && at < limitFor {
			if clock.Wait(ctx, birthday.Delay(0)) != nil {
				return
			}
			_ = d.Nack(false, true) // multiple, requeue
			continue
		}
		if d.Ack(false) == nil { // multiple
			l.acked(d.MessageId, at)
		}
	}
}

// see records one delivery.
func (l *quorumLoad) see(task string, at time.Duration, redelivered bool, count int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if redelivered {
		l.m.redelivered++
	}
	l.m.deliveryCount = max(l.m.deliveryCount, int(count))
	if task == l.m.healthy {
		if l.m.firstH < 0 {
			l.m.firstH, l.m.beforeH = at, l.m.attempts
		}
		return
	}
	l.m.attempts++
}

// acked counts one message settled.
func (l *quorumLoad) acked(task string, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if task != l.m.healthy {
		l.m.lastSent = max(l.m.lastSent, at)
	}
	if l.left--; l.left == 0 {
		close(l.done)
	}
}

func (l *quorumLoad) result() stalled {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m
}

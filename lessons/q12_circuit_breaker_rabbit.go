package lessons

// Q12 on RabbitMQ: the same two runs, with the mail loop on the broker's
// email_queue / email_queue_wait (TTL 5 s) / email_queue_dlq instead of
// in-memory timers. The breaker, the mail service and its outage, the
// scenario and the table are the in-memory lesson's, unchanged.

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuelab/qlab/breaker"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

// runQ12Rabbit declares seed 000's loop once and runs both scenarios on it.
func runQ12Rabbit(ctx context.Context, env *Env) error {
	s, err := rabbit.Open(ctx, env.Broker, brokerNames(env), env.Stream.Clock(), nil)
	if err != nil {
		return err
	}
	defer closeSession(ctx, env, s)
	if err := s.Declare(ctx, rabbit.EmailLoopTopology(q12Wait)); err != nil {
		return err
	}
	pub, err := s.Publisher(ctx)
	if err != nil {
		return err
	}
	defer pub.Close()
	return q12BothRuns(ctx, env, func(ctx context.Context, env *Env, sc q12Scenario) (q12Result, error) {
		return q12RabbitScenario(ctx, env, s, pub, sc)
	})
}

// q12RabbitScenario is runQ12Scenario on the broker: the Mail-Worker
// consumes email_queue; a failed or fast-failed delivery is rejected, and
// the broker parks it q12Wait in email_queue_wait and sends it back. The
// x-death count says how many deliveries a mail has had; at sc.maxTries
// the worker publishes it to email_queue_dlq itself and acks.
func q12RabbitScenario(ctx context.Context, env *Env, s *rabbit.Session, pub *rabbit.Publisher, sc q12Scenario) (q12Result, error) {
	const worker = "Mail-Worker"
	clock := env.Stream.Clock()
	start := clock.Elapsed()
	service := inmem.NewMailService(clock, sc.outage, env.Plan)

	// Only the worker's goroutine touches these until the consumer stops.
	var res q12Result
	var current string        // the mail being delivered, for breaker events
	calls := map[string]int{} // calls that reached the service, per mail (the attempt numbers)
	var cb *breaker.Breaker
	if sc.breaker {
		cb = q12Breaker(env, rabbit.EmailQueue, &current)
	}
	handle := func(ctx context.Context, d *rabbit.Delivery) {
		current = d.Task
		err := q12Call(ctx, env.Stream, cb, service, worker, rabbit.EmailQueue, d.Task, func() int { calls[d.Task]++; return calls[d.Task] })
		switch {
		case err == nil:
			_ = d.Ack() // a lost ack means a redelivery, which the consumer reports
			return
		case errors.Is(err, breaker.ErrOpen) || errors.Is(err, breaker.ErrTooManyRequests):
			res.rejected++
			env.Stream.Emit(lab.Event{Kind: lab.Rejected, Task: d.Task, Queue: rabbit.EmailQueue, Actor: "breaker", Note: err.Error()})
		}
		if tries := d.Attempt(); tries >= sc.maxTries { // deliveries: 1 + the rejects x-death counted
			if q12RabbitPark(ctx, env, s, pub, worker, d, calls[d.Task], tries) {
				res.dead++
			}
			return
		}
		env.Stream.Emit(lab.Event{Kind: lab.Scheduled, Task: d.Task, Queue: rabbit.EmailWait, To: rabbit.EmailQueue, Actor: worker,
			Attempt: calls[d.Task], DelayMs: q12Wait.Milliseconds()})
		_ = d.Reject() // the broker dead-letters it into email_queue_wait
	}
	c, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: rabbit.EmailQueue, Actor: worker, Prefetch: 1, Stream: env.Stream}, handle)
	if err != nil {
		return res, err
	}
	defer env.interruptAfter(s.InterruptConsumers)()
	err = q12RabbitProduce(ctx, env, pub, sc)
	if err == nil {
		err = s.WaitSettled(ctx, env.Stream, nil)
	}
	c.Stop() // waits for the handler: res is ours from here on
	res.service = service.Stats()
	res.drain = clock.Elapsed() - start
	return res, err
}

// q12RabbitPark publishes d to the DLQ with its headers and acks it; the
// dead_lettered event follows once the broker holds the copy. It reports
// whether the mail was parked.
func q12RabbitPark(ctx context.Context, env *Env, s *rabbit.Session, pub *rabbit.Publisher, worker string, d *rabbit.Delivery, attempt, tries int) bool {
	if err := pub.Republish(ctx, rabbit.EmailDLQ, d, d.Headers); err != nil {
		// Unacked, the mail returns to email_queue: pending, not lost.
		s.Logger.Warn("q12: publishing to the DLQ failed", "task", d.Task, "err", err.Error())
		return false
	}
	_ = d.Ack()
	env.Stream.Emit(lab.Event{Kind: lab.DeadLettered, Task: d.Task, Queue: rabbit.EmailQueue, To: rabbit.EmailDLQ, Actor: worker,
		Attempt: attempt, Note: fmt.Sprintf("gave up after %d deliveries", tries)})
	return true
}

// q12RabbitProduce publishes sc.mails mails to email_queue, one every
// sc.every of lesson time.
func q12RabbitProduce(ctx context.Context, env *Env, pub *rabbit.Publisher, sc q12Scenario) error {
	clock := env.Stream.Clock()
	for i := 1; i <= sc.mails; i++ {
		if i > 1 {
			if err := clock.Wait(ctx, sc.every); err != nil {
				return err
			}
		}
		id := fmt.Sprintf("%s%02d", sc.prefix, i)
		env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: rabbit.EmailQueue, Actor: "Producer"})
		if err := pub.Publish(ctx, rabbit.EmailQueue, id, nil); err != nil {
			return err
		}
	}
	return nil
}

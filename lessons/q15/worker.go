package q15

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

// q15Worker is the document's EmailWorker, written with amqp091-go's own
// calls so every settle is on the page. It consumes on a connection of its
// own: a channel the broker closes is replaced by a new one (the
// document's recovery listens to the connection only, and a channel-level
// exception leaves the connection open), and a connection the client
// library gives up is dialled again.
type q15Worker struct {
	env  *lesson.Env
	s    *rabbit.Session
	pub  *rabbit.Publisher // on the session's connection, as the document's publish channel
	run  q15Run
	book *q15Book
}

// work starts consuming email-queue and returns once every task is acked
// or nacked and the worker is idle, or the wait's bound has passed.
func (w *q15Worker) work(ctx context.Context, tasks []string) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		err := w.serve(ctx)
		if err != nil {
			w.book.fail(err)
		}
		done <- err
	}()
	waitErr := w.book.waitSettled(ctx, w.env.Stream.Clock(), tasks, q15Bound(w.env, len(tasks)))
	cancel()
	err := <-done
	if waitErr != nil { // why the worker was stopped: what it met then is beside the point
		return waitErr
	}
	return err
}

// serve dials a connection and consumes on it, one channel after another,
// until ctx ends; it dials again when the connection is gone.
func (w *q15Worker) serve(ctx context.Context) error {
	for ctx.Err() == nil {
		conn, err := w.s.Dial(ctx)
		if ctx.Err() != nil { // the run ended while the worker redialled
			if err == nil {
				_ = conn.Close()
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", w.run.actor, err)
		}
		lost := conn.NotifyClose(make(chan *amqp.Error, 1))
		err = w.serveOn(ctx, conn)
		if err != nil || ctx.Err() != nil {
			_ = conn.Close()
			return err
		}
		var reason *amqp.Error
		select { // amqp091-go closes the connection from a goroutine of its own
		case reason = <-lost:
		case <-time.After(5 * time.Second):
		}
		_ = conn.Close()
		w.book.connectionClosed(reason)
	}
	return nil
}

// serveOn consumes on channels of conn until ctx ends (nil), conn is
// gone or going (nil: serve dials again) or something unexpected fails.
func (w *q15Worker) serveOn(ctx context.Context, conn *amqp.Connection) error {
	for {
		ch, deliveries, closed, err := w.open(conn)
		if err == nil {
			err = brokerReason(w.consume(ctx, ch, deliveries), closed)
			_ = ch.Close() // already closed after a 406
		}
		var amqpErr *amqp.Error
		switch {
		case ctx.Err() != nil:
			w.book.idle()
			return nil
		case errors.As(err, &amqpErr) && amqpErr.Code == amqp.PreconditionFailed:
			w.book.channelClosed(amqpErr)
			w.env.Stream.Emit(lab.Event{Kind: lab.ChannelClosed, Task: w.book.lastAgain(), Queue: notify.EmailQueue, Actor: w.run.actor,
				Note: fmt.Sprintf("the broker closed the worker's channel after the second settle: %d %s; every message unacked on it goes back to email-queue, and the worker opens a new channel",
					amqpErr.Code, amqpErr.Reason)})
		case conn.IsClosed() || errors.Is(err, amqp.ErrClosed):
			w.book.idle()
			return nil
		default:
			return fmt.Errorf("%s: consuming %s: %w", w.run.actor, notify.EmailQueue, err)
		}
	}
}

// open opens a channel on conn with the run's prefetch and consumes
// email-queue with manual acks; closed will carry the broker's reason if
// the broker closes the channel.
func (w *q15Worker) open(conn *amqp.Connection) (*amqp.Channel, <-chan amqp.Delivery, chan *amqp.Error, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, nil, nil, err
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := ch.Qos(w.run.prefetch, 0, false); err != nil { // this.consumeChannel.prefetch(n)
		return nil, nil, nil, err
	}
	deliveries, err := ch.Consume(w.s.Names.Of(notify.EmailQueue), "", // the broker names the consumer
		false, // autoAck: no, the worker acks or nacks each delivery
		false, // exclusive
		false, // noLocal: RabbitMQ ignores it
		false, // noWait: wait for consume-ok
		nil)
	if err != nil {
		_ = ch.Close()
		return nil, nil, nil, err
	}
	return ch, deliveries, closed, nil
}

// brokerReason is why consuming stopped: the broker's reason for closing
// the channel (the 406 a second settle causes) rather than the
// amqp.ErrClosed a call on the closed channel returns. On a loaded
// machine the broker's channel.close can arrive before the worker's next
// call, which then fails with ErrClosed: amqp091-go (v1.16.0) marks the
// channel closed before it hands the reason to NotifyClose. Every
// shutdown ends by closing closed, so the wait is short; its bound is
// for safety only.
func brokerReason(err error, closed <-chan *amqp.Error) error {
	if !errors.Is(err, amqp.ErrClosed) {
		return err
	}
	select {
	case reason, ok := <-closed:
		if ok && reason != nil {
			return reason
		}
	case <-time.After(5 * time.Second):
	}
	return err
}

// isJob is Screen's check that a body is an email job.
func isJob(body []byte) error {
	_, err := notify.DecodeJob(body)
	return err
}

// consume handles deliveries one at a time until ctx ends or the channel
// dies. After each delivery it makes one round trip on the channel
// (basic.qos with the same prefetch): the broker answers it only if the
// settles before it were valid, so a 406 is seen here, before the worker
// takes another delivery from a channel that is already gone. A message
// that is not one of the run's email jobs (someone else's, or malformed)
// is moved to the run's hold queue before anything reads it.
func (w *q15Worker) consume(ctx context.Context, ch *amqp.Channel, deliveries <-chan amqp.Delivery) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case d, ok := <-deliveries:
			if !ok {
				return amqp.ErrClosed
			}
			if !w.s.Guest().Screen(ctx, notify.EmailQueue, d, isJob) {
				continue // moved to the run's hold queue: someone else's, or no email job
			}
			w.book.busy()
			if err := w.handle(ctx, d); err != nil {
				return err
			}
			if err := ch.Qos(w.run.prefetch, 0, false); err != nil {
				return err
			}
			w.book.idle()
		}
	}
}

// handle is the document's consume callback around processMessage:
//
//	try { await this.processMessage(msg); this.consumeChannel.ack(msg); }
//	catch (error) { this.consumeChannel.nack(msg, false, false); }
//
// Runs 1 and 2 have no retry code: a failure throws, and the callback
// nacks. Runs 3–5 run processMessage's retry code, which catches the
// failure and settles the delivery itself; runs 4 and 5 then ack it again,
// as the callback is written.
func (w *q15Worker) handle(ctx context.Context, d amqp.Delivery) error {
	job, err := notify.DecodeJob(d.Body)
	if err != nil { // Screen let only email jobs of the run through
		return fmt.Errorf("%s: %s: %w", w.run.actor, d.MessageId, err)
	}
	task, attempt := d.MessageId, job.Retries+1
	if d.Redelivered {
		w.book.redelivered(task)
		w.env.Stream.Emit(lab.Event{Kind: lab.Redelivered, Task: task, Queue: notify.EmailQueue, Actor: w.run.actor, Attempt: attempt,
			Note: "unacked on the channel the broker closed: requeued, and handed out again on the new channel"})
	}
	at := lab.Event{Task: task, Queue: notify.EmailQueue, Actor: w.run.actor, Attempt: attempt}
	failure := w.env.Stream.Attempt(at, func() error {
		return w.env.Work(ctx, strings.TrimPrefix(task, w.run.prefix), attempt)
	})
	switch {
	case failure == nil:
		w.book.succeeded(task)
		return d.Ack(false) // the callback's ack; processMessage acks nothing on success
	case !w.run.retry:
		w.book.nacked(task, attempt, job.Retries)
		return d.Nack(false, false) // multiple=false, requeue=false: along email-queue's dead-letter route
	}
	if err := w.processFailure(ctx, d, job, at); err != nil {
		return err
	}
	if !w.run.ackAgain {
		return nil
	}
	w.book.settledAgain(task)
	return d.Ack(false) // the callback's ack, after processMessage returned normally: the second settle of this tag
}

// processFailure is processMessage's catch block: retries++, then either a
// nack at the limit or a confirmed copy to email-retry-queue with that
// retry's expiration, and an ack of the original.
func (w *q15Worker) processFailure(ctx context.Context, d amqp.Delivery, job notify.Job, at lab.Event) error {
	job.Retries++
	if job.Retries >= notify.MaxRetries {
		w.book.nacked(at.Task, at.Attempt, job.Retries)
		return d.Nack(false, false) // multiple=false, requeue=false
	}
	delay := q15Delay(job.Retries)
	msg := rabbit.Publishing(at.Task, job.Encode())
	msg.Expiration = rabbit.Expiration(w.env.Stream.Clock(), delay)
	if err := w.pub.PublishMessage(ctx, notify.RetryQueue, msg); err != nil {
		return err
	}
	at.Kind, at.Via, at.To, at.DelayMs = lab.Scheduled, notify.RetryQueue, notify.EmailQueue, delay.Milliseconds()
	at.Note = fmt.Sprintf("a copy with retries %d and expiration %s ms (getRetryDelay(%d), scaled 1/%d); the original acked",
		job.Retries, msg.Expiration, job.Retries, q15Scale)
	w.env.Stream.Emit(at)
	return d.Ack(false)
}

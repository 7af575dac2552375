//go:build qlabex

// Wrong: Replay copies the message as it is: retries 5 and x-death travel
// with it, so the worker parks it again on its first failure.
// First failure: a replayed email starts over: retries 0, no x-death or other header

package dlqreplay

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/seeds/notify"
)

// Peek returns up to n messages from the head of queue dlq, in order, and
// leaves every one of them in dlq, in the same order: reading is not
// taking.
func Peek(ch Channel, dlq string, n int) ([]notify.Job, error) {
	var jobs []notify.Job
	var last uint64
	for range n {
		d, ok, err := ch.Get(dlq, false) // held, not taken
		if err != nil {
			return jobs, err
		}
		if !ok {
			break
		}
		last = d.DeliveryTag
		job, err := notify.DecodeJob(d.Body)
		if err != nil {
			_ = ch.Nack(last, true, true)
			return jobs, err
		}
		jobs = append(jobs, job)
	}
	if last == 0 {
		return jobs, nil
	}
	return jobs, ch.Nack(last, true, true) // all back at once, in their places
}

func Replay(ctx context.Context, ch Channel, dlq, work string, publish Publish) (int, error) {
	n := 0
	for {
		d, ok, err := ch.Get(dlq, false)
		if err != nil || !ok {
			return n, err
		}
		if err := publish(ctx, work, amqp.Publishing{MessageId: d.MessageId, Headers: d.Headers, Body: d.Body}); err != nil {
			return n, err
		}
		if err := d.Ack(false); err != nil {
			return n, err
		}
		n++
	}
}

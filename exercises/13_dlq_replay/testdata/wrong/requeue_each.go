//go:build qlabex

// Wrong: Peek hands each message back at once (nack, requeue): it goes
// back to the head, and the next Get returns the same message again.
// First failure: peek shows the first n messages, in order, each once

package dlqreplay

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/seeds/notify"
)

func Peek(ch Channel, dlq string, n int) ([]notify.Job, error) {
	var jobs []notify.Job
	for range n {
		d, ok, err := ch.Get(dlq, false)
		if err != nil || !ok {
			return jobs, err
		}
		job, _ := notify.DecodeJob(d.Body)
		jobs = append(jobs, job)
		if err := d.Nack(false, true); err != nil {
			return jobs, err
		}
	}
	return jobs, nil
}

func Replay(ctx context.Context, ch Channel, dlq, work string, publish Publish) (int, error) {
	n := 0
	for {
		d, ok, err := ch.Get(dlq, false)
		if err != nil || !ok {
			return n, err
		}
		job, _ := notify.DecodeJob(d.Body)
		job.Retries = 0
		if err := publish(ctx, work, amqp.Publishing{MessageId: d.MessageId, Body: job.Encode()}); err != nil {
			return n, err
		}
		if err := d.Ack(false); err != nil {
			return n, err
		}
		n++
	}
}

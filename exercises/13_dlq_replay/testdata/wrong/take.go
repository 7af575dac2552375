//go:build qlabex

// Wrong: Peek reads with autoAck: each message read is gone from the DLQ
// (the management UI's "Automatic ack" does the same).
// First failure: reading leaves the DLQ as it was: every message, in order

package dlqreplay

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/seeds/notify"
)

func Peek(ch Channel, dlq string, n int) ([]notify.Job, error) {
	var jobs []notify.Job
	for range n {
		d, ok, err := ch.Get(dlq, true)
		if err != nil || !ok {
			return jobs, err
		}
		job, _ := notify.DecodeJob(d.Body)
		jobs = append(jobs, job)
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

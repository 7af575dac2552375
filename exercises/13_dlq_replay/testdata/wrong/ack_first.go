//go:build qlabex

// Wrong: Replay acks the original before its copy is confirmed: a publish
// that fails then loses the email.
// First failure: each copy is confirmed before its original is acked

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
		job, _ := notify.DecodeJob(d.Body)
		if err := d.Ack(false); err != nil {
			return n, err
		}
		job.Retries = 0
		if err := publish(ctx, work, amqp.Publishing{MessageId: d.MessageId, Body: job.Encode()}); err != nil {
			return n, err
		}
		n++
	}
}

//go:build qlabex

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

// Replay moves every message in dlq to queue work and returns how many:
// for each, a copy whose job starts over (Retries 0, no x-death or other
// header), published and confirmed, and only then the original acked.
func Replay(ctx context.Context, ch Channel, dlq, work string, publish Publish) (int, error) {
	n := 0
	for {
		d, ok, err := ch.Get(dlq, false)
		if err != nil || !ok {
			return n, err
		}
		job, err := notify.DecodeJob(d.Body)
		if err != nil {
			_ = d.Nack(false, true) // not ours to replay: left where it was
			return n, err
		}
		job.Retries = 0 // starts over; no headers, so no x-death either
		copied := amqp.Publishing{MessageId: d.MessageId, ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: job.Encode()}
		if err := publish(ctx, work, copied); err != nil {
			_ = d.Nack(false, true)
			return n, err
		}
		if err := d.Ack(false); err != nil { // the copy is confirmed: now the original can go
			return n, err
		}
		n++
	}
}

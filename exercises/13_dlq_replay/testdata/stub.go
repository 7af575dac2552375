//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package dlqreplay

import (
	"context"

	"github.com/queuelab/qlab/seeds/notify"
)

// Peek returns up to n messages from the head of queue dlq, in order, and
// leaves every one of them in dlq, in the same order: reading is not
// taking.
func Peek(ch Channel, dlq string, n int) ([]notify.Job, error) {
	var jobs []notify.Job
	for range n {
		// TODO: autoAck true removes the message as it is read. Get without
		//       autoAck, keep the messages until you have read them all,
		//       then hand them all back at once (a Nack with multiple and
		//       requeue): one requeued at once is the next Get's answer.
		d, ok, err := ch.Get(dlq, true)
		if err != nil || !ok {
			return jobs, err
		}
		job, err := notify.DecodeJob(d.Body)
		if err != nil {
			return jobs, err
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// Replay moves every message in dlq to queue work and returns how many:
// for each, a copy whose job starts over (Retries 0, no x-death or other
// header), published and confirmed, and only then the original acked.
func Replay(ctx context.Context, ch Channel, dlq, work string, publish Publish) (int, error) {
	// TODO: Get each message (not autoAck), decode its job, set Retries to
	//       0, publish a copy with the same MessageId and the job's new
	//       body (no headers), then ack the original. Stop when Get finds
	//       the queue empty.
	return 0, nil
}

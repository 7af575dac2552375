//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package attempt

import (
	amqp "github.com/rabbitmq/amqp091-go"
)

// FromDeaths returns the attempt a delivery stands for, read from its
// x-death header: 1 + the number of times the message was rejected, in
// any queue. No x-death header means attempt 1. A header the broker would
// not have written is an error: x-death that is not an array ([]any) of
// tables (amqp.Table), an entry whose "count" is not an integer in
// 0..MaxRetries (amqp091-go decodes the broker's count as int64), or more
// than MaxRetries rejects in all.
//
// An x-death entry looks like amqp.Table{"queue": "email_queue",
// "reason": "rejected", "count": int64(3), "exchange": "", …}; the broker
// keeps one entry per (queue, reason) and counts in it.
func FromDeaths(headers amqp.Table) (int, error) {
	// TODO: read headers["x-death"]; sum the counts of the entries whose
	//       "reason" is "rejected"; refuse what the broker would not write.
	return 1, nil
}

// FromHeader returns the attempt a delivery stands for, read from the
// worker's own RetriesHeader: 1 + the retries it counts. No header means
// attempt 1. A value that is not an integer in 0..MaxRetries is an error.
// amqp091-go decodes an AMQP integer as int64 (long) or int32 (int), as
// the publisher wrote it; accept both.
func FromHeader(headers amqp.Table) (int, error) {
	// TODO: read headers[RetriesHeader] with a type switch; refuse strings,
	//       floats, negative and too large counts.
	return 1, nil
}

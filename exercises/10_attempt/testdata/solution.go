//go:build qlabex

package attempt

import (
	"fmt"

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
	v, ok := headers["x-death"]
	if !ok {
		return 1, nil
	}
	entries, ok := v.([]any)
	if !ok {
		return 0, fmt.Errorf("x-death is a %T, not an array", v)
	}
	var rejects int64
	for i, e := range entries {
		t, ok := e.(amqp.Table)
		if !ok {
			return 0, fmt.Errorf("x-death entry %d is a %T, not a table", i, e)
		}
		n, err := count(t["count"])
		if err != nil {
			return 0, fmt.Errorf("x-death entry %d: %w", i, err)
		}
		if t["reason"] == "rejected" {
			rejects += n // each n ≤ MaxRetries: no overflow
		}
		if rejects > MaxRetries {
			return 0, fmt.Errorf("x-death counts more than %d rejects", MaxRetries)
		}
	}
	return 1 + int(rejects), nil
}

// FromHeader returns the attempt a delivery stands for, read from the
// worker's own RetriesHeader: 1 + the retries it counts. No header means
// attempt 1. A value that is not an integer in 0..MaxRetries is an error.
// amqp091-go decodes an AMQP integer as int64 (long) or int32 (int), as
// the publisher wrote it; accept both.
func FromHeader(headers amqp.Table) (int, error) {
	v, ok := headers[RetriesHeader]
	if !ok {
		return 1, nil
	}
	n, err := count(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", RetriesHeader, err)
	}
	return 1 + int(n), nil
}

// count is v as a count in 0..MaxRetries.
func count(v any) (int64, error) {
	var n int64
	switch c := v.(type) {
	case int64:
		n = c
	case int32:
		n = int64(c)
	default:
		return 0, fmt.Errorf("count %v is a %T, not an integer", v, v)
	}
	if n < 0 || n > MaxRetries {
		return 0, fmt.Errorf("count %d is outside 0..%d", n, MaxRetries)
	}
	return n, nil
}

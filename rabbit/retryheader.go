package rabbit

import (
	"errors"
	"fmt"
	"math"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The retry headers a worker that republishes a failed message writes, to
// count the retries itself instead of relying on the broker's x-death.
//
// RetryCountHeader is the lab's own counter and the one to copy: its name
// has no "x-" prefix. RabbitMQ's maintainers treat x- headers as the
// broker's (rabbitmq-server #10709, #11339; spring-amqp #2688), and 4.0
// stopped interpreting the x-death a client publishes; a name outside that
// namespace can never collide with a header the broker writes or reads.
// Spring AMQP 3.2 made the same move with its retry_count header.
//
// RetriesHeader and RetryReasonHeader are the RaffleAPI's names (x-retries,
// x-retry-reason): they work on every version measured, but they sit in
// the namespace the broker claims.
const (
	RetryCountHeader  = "qlab-retries"      // retries so far, an integer: the lab's own counter
	RetryErrorHeader  = "qlab-retry-reason" // the error of the attempt that failed last, beside RetryCountHeader
	RetriesHeader     = "x-retries"         // the RaffleAPI's retry counter (an integer)
	RetryReasonHeader = "x-retry-reason"    // the RaffleAPI's last error, beside RetriesHeader
)

// MaxRetryCount is the largest retry (or reject) count the lab accepts
// from a header. No lesson retries more than 15 times (Q13); a count above
// 100 was not written by a worker of the lab, so it is refused rather than
// read as attempt 1,000 or more.
const MaxRetryCount = 100

// ErrBadCount means a header meant to hold a retry count holds something
// else: not an integer, negative, or above MaxRetryCount. Such a message
// cannot say which attempt it is; the flow holds it unprocessed.
var ErrBadCount = errors.New("not a valid retry count")

// ReadRetries reads retry header name of headers, validated: 0 when the
// header is missing (a message never retried), an error wrapping
// ErrBadCount when it is not an AMQP integer in [0, MaxRetryCount].
func ReadRetries(headers amqp.Table, name string) (int, error) {
	v, ok := headers[name]
	if !ok {
		return 0, nil
	}
	n, err := retryCount(v)
	if err != nil {
		return 0, fmt.Errorf("header %s: %w", name, err)
	}
	return n, nil
}

// Retries reads seed 004's x-retries header: 0 when it is missing or not
// a valid count (ReadRetries tells the two apart).
func Retries(headers amqp.Table) int {
	n, _ := ReadRetries(headers, RetriesHeader)
	return n
}

// retryCount is v as a retry count: an AMQP integer in [0, MaxRetryCount].
func retryCount(v any) (int, error) {
	n, ok := integer(v)
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: a %T, not an integer", ErrBadCount, v)
	case n < 0:
		return 0, fmt.Errorf("%w: %d is negative", ErrBadCount, n)
	case n > MaxRetryCount:
		return 0, fmt.Errorf("%w: %d is above %d", ErrBadCount, n, MaxRetryCount)
	}
	return int(n), nil
}

// integer is v as an int64 when v is one of the integer types amqp091-go
// decodes a header table into (and int, for tables built in Go).
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int8:
		return int64(n), true
	case int:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}

// RetryReason reads the last error a retrying worker recorded: the lab's
// qlab-retry-reason, else seed 004's x-retry-reason; "" when neither.
func RetryReason(headers amqp.Table) string {
	if s, ok := headers[RetryErrorHeader].(string); ok {
		return s
	}
	s, _ := headers[RetryReasonHeader].(string)
	return s
}

// reasonHeaderFor is the header that carries the last error beside retry
// counter header: seed 004's pair stays together, any other counter gets
// the lab's qlab-retry-reason.
func reasonHeaderFor(header string) string {
	if header == RetriesHeader {
		return RetryReasonHeader
	}
	return RetryErrorHeader
}

// WithRetry returns a copy of headers (nil is fine) with x-retries set to
// retries and x-retry-reason to reason; every other header, x-death
// included, is copied as it is. headers itself is not changed.
func WithRetry(headers amqp.Table, retries int, reason string) amqp.Table {
	out := copyHeaders(headers)
	out[RetriesHeader] = int64(retries)
	out[RetryReasonHeader] = reason
	return out
}

// copyHeaders returns a shallow copy of headers, never nil.
func copyHeaders(headers amqp.Table) amqp.Table {
	out := make(amqp.Table, len(headers)+2)
	for k, v := range headers {
		out[k] = v
	}
	return out
}

// WithoutBrokerHeaders returns a copy of headers without the headers the
// broker writes when it dead-letters a message (x-death and the
// x-first-death-* trio), so a republished copy starts a fresh history.
func WithoutBrokerHeaders(headers amqp.Table) amqp.Table {
	out := copyHeaders(headers)
	for _, k := range []string{"x-death", "x-first-death-queue", "x-first-death-reason", "x-first-death-exchange"} {
		delete(out, k)
	}
	return out
}

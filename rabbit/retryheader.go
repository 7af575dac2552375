package rabbit

import amqp "github.com/rabbitmq/amqp091-go"

// The retry headers of seed 004: a worker that republishes a failed message
// counts the retries itself instead of relying on the broker's x-death.
const (
	RetriesHeader     = "x-retries"      // how many times the message was retried so far (an integer)
	RetryReasonHeader = "x-retry-reason" // the error of the attempt that failed last
)

// Retries reads the x-retries header of headers: 0 when it is missing or
// not an integer (a message that was never retried).
func Retries(headers amqp.Table) int {
	return int(toInt64(headers[RetriesHeader]))
}

// RetryReason reads the x-retry-reason header of headers, "" when missing.
func RetryReason(headers amqp.Table) string {
	s, _ := headers[RetryReasonHeader].(string)
	return s
}

// WithRetry returns a copy of headers (nil is fine) with x-retries set to
// retries and x-retry-reason to reason; every other header, x-death
// included, is copied as it is. headers itself is not changed.
func WithRetry(headers amqp.Table, retries int, reason string) amqp.Table {
	out := CopyHeaders(headers)
	out[RetriesHeader] = int64(retries)
	out[RetryReasonHeader] = reason
	return out
}

// CopyHeaders returns a shallow copy of headers, never nil.
func CopyHeaders(headers amqp.Table) amqp.Table {
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
	out := CopyHeaders(headers)
	for _, k := range []string{"x-death", "x-first-death-queue", "x-first-death-reason", "x-first-death-exchange"} {
		delete(out, k)
	}
	return out
}

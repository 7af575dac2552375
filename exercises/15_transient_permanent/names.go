package classify

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/seeds/birthday"
)

// The birthday scheduler's queues (seed 003) and retry policy.
const (
	Queue      = birthday.Queue  // birthday.messages.queue: the worker consumes it
	DLQ        = birthday.DLQ    // birthday.messages.dlq: where a message is parked
	MaxRetries = 5               // QUEUE_MAX_RETRIES: retries after the first attempt
	FirstDelay = 2 * time.Second // QUEUE_RETRY_DELAY: the wait before the first retry
)

// WaitQueue is the name of the TTL wait queue that holds a message for
// delay and then sends it back to Queue: birthday.messages.queue.retry.8s
// for 8 s. Q19's topology has one for each of 2, 4, 8, 16 and 32 s; a retry
// into a queue the topology lacks is lost.
func WaitQueue(delay time.Duration) string {
	return fmt.Sprintf("%s.retry.%ds", Queue, int(delay.Seconds()))
}

// Message is a birthday message's JSON body:
// {"id":"M1","kind":"birthday","to":"ana@example.com","name":"Ana"}.
type Message struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	To   string `json:"to"`
	Name string `json:"name"`
}

// APIError is the mail API's answer when it did not send: the HTTP status
// it replied with and its message. A send that got no answer at all (the
// connection reset, the request timed out) fails with another error.
type APIError struct {
	Status  int
	Message string
}

// Error says the status and the message: "mail API 429: rate limited".
func (e *APIError) Error() string { return fmt.Sprintf("mail API %d: %s", e.Status, e.Message) }

// Send sends m's greeting through the mail API; nil when it went out.
type Send func(ctx context.Context, m Message) error

package flow

import (
	"fmt"
	"time"
)

// RetryAfter sends the message through delay queue via (a Delay queue:
// no queue TTL, each message carries its own) with delay as the copy's
// expiration, because of cause; via's dead-letter route brings it back.
// This is seed 002's publishToRetryQueue(job, delay): only a consumer
// that counts attempts in a header (Consumer.RetryHeader) can do it, since
// a reject cannot give the message an expiration. Where the delay queue
// expires only its head, a long delay ahead holds back every shorter one
// behind it.
func RetryAfter(via string, delay time.Duration, cause error) Decision {
	return Decision{Action: ActRetry, To: via, Delay: delay, Reason: errText(cause)}
}

// ErrNoDelay means a retry into a delay queue came without a delay, or
// with one into a wait queue (whose TTL is the delay), or from a consumer
// that lets the broker count (a reject carries no expiration).
var ErrNoDelay = fmt.Errorf("%w: a delay queue takes RetryAfter with a positive delay from a consumer with a RetryHeader", ErrNoRoute)

// CheckDelay reports whether retry decision dec into via, by a consumer
// that counts in header retryHeader ("" for the broker's count), pairs a
// delay with a delay queue as RetryAfter must.
func CheckDelay(via Queue, dec Decision, retryHeader string) error {
	switch {
	case via.Role == Delay && (dec.Delay <= 0 || retryHeader == ""):
		return fmt.Errorf("retry into %s: %w", via.Name, ErrNoDelay)
	case via.Role != Delay && dec.Delay != 0:
		return fmt.Errorf("retry into %s with its own delay: %w", via.Name, ErrNoDelay)
	}
	return nil
}

// ExpirationNote opens the note of every scheduled event of a RetryAfter,
// on both backends, so a reader (and the parity suite) can tell a message
// waiting out its own expiration in a delay queue from one on a wait
// queue's TTL or an in-memory timer.
const ExpirationNote = "per-message expiration"

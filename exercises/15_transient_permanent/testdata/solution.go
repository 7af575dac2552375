//go:build qlabex

package classify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/queuelab/qlab/flow"
)

// Transient reports whether a send that failed with err may work if
// tried again later: no answer at all (the network, a timeout), or an
// answer that says "later" (429 rate limit, a 5xx). Any other answer of
// the API (400, 401, 404, 422) is permanent.
func Transient(err error) bool {
	var api *APIError
	if !errors.As(err, &api) {
		return true // no answer: the request may never have arrived
	}
	return api.Status == http.StatusTooManyRequests || api.Status >= 500
}

// Backoff is the wait before retry n (0 for the first retry): 2 s·2ⁿ,
// so 2, 4, 8, 16 and 32 s.
func Backoff(retry int) time.Duration { return FirstDelay << retry }

// Handle is the worker's verdict on delivery d: d.Body is the message's
// JSON, d.Attempt counts its deliveries (1, then one more per retry).
// Ack a message that was sent. Park a body that is not JSON, and a
// permanent failure, in DLQ at once with the reason. Retry a transient
// failure through WaitQueue(Backoff(n)) for retry n while fewer than
// MaxRetries retries are spent; then park it, saying why.
func Handle(ctx context.Context, d *flow.Delivery, send Send) flow.Decision {
	var m Message
	if err := json.Unmarshal(d.Body, &m); err != nil {
		return flow.Park(DLQ, "malformed JSON, not sent: "+err.Error())
	}
	err := send(ctx, m)
	retries := d.Attempt - 1 // spent before this attempt
	switch {
	case err == nil:
		return flow.Ack()
	case !Transient(err):
		return flow.Park(DLQ, "permanent, no retry: "+err.Error())
	case retries >= MaxRetries:
		return flow.Park(DLQ, fmt.Sprintf("transient, %d retries spent: %v", retries, err))
	}
	return flow.Retry(WaitQueue(Backoff(retries)), err)
}

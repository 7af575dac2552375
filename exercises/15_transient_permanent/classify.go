//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package classify

import (
	"context"
	"encoding/json"
	"time"

	"github.com/queuelab/qlab/flow"
)

// Transient reports whether a send that failed with err may work if
// tried again later: no answer at all (the network, a timeout), or an
// answer that says "later" (429 rate limit, a 5xx). Any other answer of
// the API (400, 401, 404, 422) is permanent.
func Transient(err error) bool {
	// TODO: tell the two kinds apart. errors.As(err, &apiErr) with
	//       apiErr a *APIError finds the API's answer and its Status;
	//       an error without one never got an answer.
	return true
}

// Backoff is the wait before retry n (0 for the first retry): 2 s·2ⁿ,
// so 2, 4, 8, 16 and 32 s.
func Backoff(retry int) time.Duration {
	// TODO: double FirstDelay once per earlier retry.
	return FirstDelay
}

// Handle is the worker's verdict on delivery d: d.Body is the message's
// JSON, d.Attempt counts its deliveries (1, then one more per retry).
// Ack a message that was sent. Park a body that is not JSON, and a
// permanent failure, in DLQ at once with the reason. Retry a transient
// failure through WaitQueue(Backoff(n)) for retry n while fewer than
// MaxRetries retries are spent; then park it, saying why.
func Handle(ctx context.Context, d *flow.Delivery, send Send) flow.Decision {
	var m Message
	// TODO: a body that does not parse must not be sent: park it (flow.Park)
	//       with the parse error as the reason.
	_ = json.Unmarshal(d.Body, &m)
	err := send(ctx, m)
	if err == nil {
		return flow.Ack()
	}
	// TODO: permanent: park at once; transient: park when MaxRetries
	//       retries are spent (d.Attempt-1 is how many were), else retry.
	return flow.Retry(WaitQueue(Backoff(d.Attempt-1)), err)
}

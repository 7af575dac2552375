//go:build qlabex

// Wrong: every error is retried: a 422 is sent five more times, and
// refused five more times, before it reaches the DLQ 62 s later.
// First failure: a permanent error (400, 401, 404, 422) goes to the DLQ at once, with the error

package classify

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queuelab/qlab/flow"
)

func Transient(err error) bool { return true }

func Backoff(retry int) time.Duration { return FirstDelay << retry }

func Handle(ctx context.Context, d *flow.Delivery, send Send) flow.Decision {
	var m Message
	if err := json.Unmarshal(d.Body, &m); err != nil {
		return flow.Park(DLQ, "malformed JSON: "+err.Error())
	}
	err := send(ctx, m)
	switch {
	case err == nil:
		return flow.Ack()
	case !Transient(err) || d.Attempt-1 >= MaxRetries:
		return flow.Park(DLQ, fmt.Sprintf("gave up: %v", err))
	}
	return flow.Retry(WaitQueue(Backoff(d.Attempt-1)), err)
}

//go:build qlabex

// Wrong: off by one: it parks when the attempt (not the retries spent)
// reaches MaxRetries: four retries, five attempts.
// First failure: a transient error (network, timeout, 429, 5xx): 5 retries, then the DLQ

package classify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/flow"
)

func Transient(err error) bool {
	var api *APIError
	return !errors.As(err, &api) || api.Status == 429 || api.Status >= 500
}

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
	case !Transient(err):
		return flow.Park(DLQ, "permanent: "+err.Error())
	case d.Attempt >= MaxRetries:
		return flow.Park(DLQ, fmt.Sprintf("transient, gave up at attempt %d: %v", d.Attempt, err))
	}
	return flow.Retry(WaitQueue(Backoff(d.Attempt-1)), err)
}

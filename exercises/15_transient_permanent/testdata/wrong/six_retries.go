//go:build qlabex

// Wrong: off by one the other way (> instead of >=): a sixth retry, into
// a 64 s wait queue the topology does not have: the message is lost.
// First failure: the run ends by itself

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
	retries := d.Attempt - 1
	switch {
	case err == nil:
		return flow.Ack()
	case !Transient(err):
		return flow.Park(DLQ, "permanent: "+err.Error())
	case retries > MaxRetries:
		return flow.Park(DLQ, fmt.Sprintf("transient, %d retries spent: %v", retries, err))
	}
	return flow.Retry(WaitQueue(Backoff(retries)), err)
}

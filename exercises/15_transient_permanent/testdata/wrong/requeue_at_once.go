//go:build qlabex

// Wrong: the seed's "NACK + requeue", which RabbitMQ does at once: no
// wait at all, and since a requeue is the same delivery again, the
// attempt never grows and the budget never ends.
// First failure: retry n waits 2 s·2ⁿ (2, 4, 8, 16, 32 s) in the wait queue of that delay

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
	case d.Attempt-1 >= MaxRetries:
		return flow.Park(DLQ, fmt.Sprintf("transient, gave up: %v", err))
	}
	return flow.Requeue()
}

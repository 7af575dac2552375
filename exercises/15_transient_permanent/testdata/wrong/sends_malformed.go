//go:build qlabex

// Wrong: the parse error is ignored: a malformed body is sent as an empty
// message, refused, and the refusal is what parks it.
// First failure: malformed JSON goes to the DLQ at once with a reason, never sent

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
	_ = json.Unmarshal(d.Body, &m)
	err := send(ctx, m)
	switch {
	case err == nil:
		return flow.Ack()
	case !Transient(err):
		return flow.Park(DLQ, "permanent: "+err.Error())
	case d.Attempt-1 >= MaxRetries:
		return flow.Park(DLQ, fmt.Sprintf("transient, gave up: %v", err))
	}
	return flow.Retry(WaitQueue(Backoff(d.Attempt-1)), err)
}

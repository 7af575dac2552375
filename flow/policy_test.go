package flow_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/flow"
)

// The shared policy: retry while the budget lasts, park after it, park a
// permanent error at once, and park every failure at the end of a chain.
func TestRetriesDecides(t *testing.T) {
	boom := errors.New("boom")
	r := flow.Retries{Via: "wait", DLQ: "dlq", Max: 3}
	at := func(n int) *flow.Delivery { return &flow.Delivery{Task: "A", Attempt: n} }

	assert.Equal(t, flow.Ack(), r.Decide(at(1), nil))
	assert.Equal(t, flow.Retry("wait", boom), r.Decide(at(1), boom))
	assert.Equal(t, flow.Retry("wait", boom), r.Decide(at(2), boom))
	assert.Equal(t, flow.Park("dlq", "attempt 3 of 3 failed"), r.Decide(at(3), boom))

	perm := r.Decide(at(1), fmt.Errorf("bad address: %w", flow.Permanent(boom)))
	assert.Equal(t, flow.ActPark, perm.Action, "a permanent error spends no retry")
	assert.Equal(t, "dlq", perm.To)
	assert.Contains(t, perm.Reason, "permanent at attempt 1")
	assert.ErrorIs(t, flow.Permanent(boom), boom, "the cause stays readable")

	end := flow.Retries{DLQ: "dlq", GaveUp: func(int) string { return "failed all retries" }}
	assert.Equal(t, flow.Park("dlq", "failed all retries"), end.Decide(at(3), boom), "no Via: the chain ends here")
	forever := flow.Retries{Via: "wait", DLQ: "dlq"}
	assert.Equal(t, flow.ActRetry, forever.Decide(at(99), boom).Action, "no Max: no budget")
}

package raffle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The seed's routes: a user reaches raffle_queue through raffle_exchange,
// a retry waits in raffle_retry_10s and comes back to raffle_queue, a
// reject lands in raffle_dlq.
func TestTopologyRoutesAsTheSeed(t *testing.T) {
	topo := Topology()
	require.NoError(t, topo.Check())
	assert.Equal(t, []string{Queue}, topo.Route(Exchange, Queue))
	assert.Equal(t, []string{RetryQueue}, topo.Route(RetryExchange, RetryQueue))
	assert.Equal(t, Queue, topo.Settle(RetryQueue), "an expired retry goes back to raffle_queue")
	assert.Equal(t, DLQ, topo.DeadLetterTarget(Queue))
	q, _ := topo.Queue(RetryQueue)
	assert.Equal(t, RetryTTL, q.TTL)
}

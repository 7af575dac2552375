package rabbit_test

import (
	"errors"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestDeclareArgs: a queue with arguments a flow.Topology has no field for is
// declared as given, refused when it already exists (the run did not
// create it), deleted at Close, and a refusal of the broker's comes back
// in the broker's own words (an *amqp.Error).
func TestDeclareArgs(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	args := amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(3)}
	require.NoError(t, s.Topo().DeclareArgs(ctx, "args.q", args))
	var exists *rabbit.ExistsError
	require.ErrorAs(t, s.Topo().DeclareArgs(ctx, "args.q", args), &exists, "declared once, it exists")
	assert.Equal(t, []string{s.Names.Of("args.q")}, exists.Queues)

	err := s.Topo().DeclareArgs(ctx, "args.bad", amqp.Table{"x-queue-type": "quorum", "x-max-priority": "high"})
	var amqpErr *amqp.Error
	require.True(t, errors.As(err, &amqpErr), "the broker's refusal, as it sent it: %v", err)
	assert.Equal(t, amqp.PreconditionFailed, amqpErr.Code)

	require.NoError(t, s.Close(ctx))
	n, err := s.Topo().Depth(ctx, "args.q")
	assert.Error(t, err, "Close deleted it (depth %d)", n)
}

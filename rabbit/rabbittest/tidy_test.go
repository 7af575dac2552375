package rabbittest

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
)

// TestTidyDeletesWhatAnEarlierCloseLeft: a test that closes its session
// itself with too short a bound (flowtest's harness, on a loaded broker)
// leaves the queues it could not delete, and a second Close no longer
// knows them; the helper's clean-up must delete them still. Stop 38's CI
// left seven of flowtest's queues on the broker so.
func TestTidyDeletesWhatAnEarlierCloseLeft(t *testing.T) {
	s := Session(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), brokerBound)
	defer cancel()
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
	name := s.Names.Of("work")

	late, stop := context.WithCancel(ctx)
	stop() // a bound already spent: no delete can get through
	require.Error(t, s.Close(late))
	left, _ := s.Topo().Left()
	require.Contains(t, left, name, "the failed Close remembers what it left")

	tidy(t, s)
	assert.False(t, exists(t, name), "%s is still on the broker", name)
}

// exists reports whether the shared broker has a queue called name.
func exists(t *testing.T, name string) bool {
	conn, err := amqp.DialConfig(NeedBroker(t), amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclarePassive(name, false, false, false, false, nil)
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound {
		return false
	}
	require.NoError(t, err)
	return true
}

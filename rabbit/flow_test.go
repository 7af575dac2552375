package rabbit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/flow/flowtest"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// flowSpeed makes the suite's 1 s wait queue a 50 ms one.
const flowSpeed = 20

// TestFlowContract runs the seam's shared suite on the broker mechanism,
// each case on a session with its own queue prefix.
func TestFlowContract(t *testing.T) {
	t.Parallel() // its cases wait on the broker's timers, each under a prefix of its own
	flowtest.Run(t, flowtest.Config{
		Speed: flowSpeed,
		Open: func(t *testing.T, ctx context.Context, stream *lab.Stream) flow.Backend {
			s := rabbittest.Session(t, flowSpeed)
			b, err := rabbit.NewFlow(ctx, s, stream)
			require.NoError(t, err)
			return b
		},
		Run: func(t *testing.T, name string, f func(*testing.T)) { t.Run(name, f) },
	})
}

// TestPublishToSurvivesALostChannel: a publish to an exchange after the
// broker closed the session's connection (and so the publisher's channel)
// reopens the channel and is confirmed, as Publish is. It failed with
// "channel/connection is not open" when PublishTo had a path of its own.
func TestPublishToSurvivesALostChannel(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	stream := lab.NewStream("test", lab.Rabbit, lab.NewClock(1), lab.SinkFunc(func(lab.Event) {}))
	f, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	topo := flow.Topology{
		Queues:    []flow.Queue{{Name: "mail", Role: flow.Work}},
		Exchanges: []flow.Exchange{{Name: "notify", Kind: flow.Topic}},
		Bindings:  []flow.Binding{{Exchange: "notify", Queue: "mail", Key: "mail.*"}},
	}
	require.NoError(t, f.Declare(ctx, topo))
	require.NoError(t, f.PublishTo(ctx, "API", "notify", "mail.welcome", "A"))

	require.NoError(t, s.Connection().Close()) // the publisher's channel goes with it
	require.NoError(t, f.PublishTo(ctx, "API", "notify", "mail.welcome", "B"))
	depth, err := f.Depth(ctx, "mail")
	require.NoError(t, err)
	assert.Equal(t, 2, depth, "both routed to mail")
	require.NoError(t, f.Close(ctx))
}

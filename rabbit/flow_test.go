package rabbit_test

import (
	"context"
	"testing"

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

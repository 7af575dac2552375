package inmem_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/flow/flowtest"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// TestFlowContract runs the seam's shared suite on the in-memory
// mechanism, each case in a synctest bubble (exact lesson time).
func TestFlowContract(t *testing.T) {
	flowtest.Run(t, flowtest.Config{
		Speed: 1,
		Open: func(_ *testing.T, ctx context.Context, stream *lab.Stream) flow.Backend {
			return inmem.NewFlow(ctx, stream, 64)
		},
		Run: func(t *testing.T, name string, f func(*testing.T)) {
			t.Run(name, func(t *testing.T) { synctest.Test(t, f) })
		},
	})
}

package inmem_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

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
		Open: func(t *testing.T, ctx context.Context, stream *lab.Stream) flow.Backend {
			f := inmem.NewFlow(ctx, stream, 64)
			t.Cleanup(func() { // runs after the suite's Close
				assert.Zero(t, f.System().Goroutines(), "no worker, producer or timer goroutine outlives the run")
				assert.Zero(t, f.System().Timers(), "no timer is left pending")
			})
			return f
		},
		Run: func(t *testing.T, name string, f func(*testing.T)) {
			t.Run(name, func(t *testing.T) { synctest.Test(t, f) })
		},
	})
}

package inmem_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/flow/flowtest"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
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

// A crash loses what a prefetching consumer held in memory as surely as
// what its queue held, and the stream says so for each task.
func TestCrashLosesThePrefetchWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &labtest.Recorder{}
		stream := lab.NewStream("q00", lab.InMem, lab.NewClock(1), rec)
		f := inmem.NewFlow(t.Context(), stream, 64)
		require.NoError(t, f.Declare(t.Context(), flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
		require.NoError(t, f.Consume(t.Context(), flow.Consumer{Queue: "work", Actor: "W", Prefetch: 3,
			Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
				<-ctx.Done() // stuck until the process dies
				return flow.Requeue()
			}}))
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			require.NoError(t, f.Publish(t.Context(), "P", "work", id))
		}
		synctest.Wait()
		f.Interrupt()
		stream.Finish()
		events := rec.Events()
		labtest.AssertAccounted(t, events)
		lost := 0
		for _, r := range labtest.Fates(events) {
			if r.Fate == lab.FateLost {
				lost++
			}
		}
		assert.GreaterOrEqual(t, lost, 4, "two in the queue and two waiting in the window, at least")
		var window int
		for _, e := range labtest.OfKind(events, lab.Lost) {
			if strings.Contains(e.Note, "prefetch window") {
				window++
			}
		}
		assert.Equal(t, 2, window, "the two behind the stuck one")
	})
}

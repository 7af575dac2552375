package inmem_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
)

// TestDelayQueueAtAnOddSpeed: at 7.4× the lesson time a delay queue's
// timer wakes at can fall a few nanoseconds short of the head's expiry.
// The head is due all the same: re-armed for less than a real nanosecond,
// its timer fired at once for ever, and under synctest Q14 in memory
// never ended (TestEverySpeed found it).
func TestDelayQueueAtAnOddSpeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &labtest.Recorder{}
		stream := lab.NewStream("q00", lab.InMem, lab.NewClock(7.4), rec)
		f := inmem.NewFlow(t.Context(), stream, 64)
		require.NoError(t, f.Declare(t.Context(), flow.Topology{Queues: []flow.Queue{
			{Name: "work", Role: flow.Work},
			{Name: "retry", Role: flow.Delay, DeadLetterTo: "work"},
		}}))
		delays := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}
		require.NoError(t, f.Consume(t.Context(), flow.Consumer{Queue: "work", Actor: "W", RetryHeader: "x-retries",
			Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
				err := stream.Attempt(d.Event("W"), func() error {
					if d.Attempt > len(delays) {
						return nil
					}
					return errors.New("down")
				})
				if err == nil {
					return flow.Ack()
				}
				return flow.RetryAfter("retry", delays[d.Attempt-1], err)
			}}))
		for _, id := range []string{"A", "B", "C"} {
			require.NoError(t, f.Publish(t.Context(), "P", "work", id))
		}
		require.NoError(t, f.Wait(t.Context()))
		require.NoError(t, f.Close(t.Context()))
		stream.Finish()
		for _, r := range labtest.Fates(rec.Events()) {
			assert.Equal(t, lab.FateDone, r.Fate, r.ID)
			assert.Equal(t, len(delays)+1, r.Attempts, r.ID)
		}
	})
}

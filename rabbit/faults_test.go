package rabbit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// The TUI's fault keys (lab.Faults) on a real broker: closing the channel
// of a worker that holds a delivery, and cutting the run's connections,
// each make the broker hand the delivery out again, and the consumer
// reconnects; only connections dialled under the run's context are cut.
func TestFaultKeysRedeliver(t *testing.T) {
	for _, fault := range []string{"close the holding channel", "cut the connections"} {
		t.Run(fault, func(t *testing.T) {
			s := rabbittest.Session(t, 1)
			f := &lab.Faults{}
			ctx := lab.WithFaults(testCtx(t), f)
			require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
			pub, err := s.Publisher(testCtx(t)) // not under the switchboard: never cut
			require.NoError(t, err)

			var mu sync.Mutex
			var rec lab.Recorder
			stream := lab.NewStream("test", lab.Rabbit, lab.NewClock(1), lab.SinkFunc(func(e lab.Event) {
				mu.Lock()
				defer mu.Unlock()
				rec.Emit(e)
			}))
			stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: "work"})
			require.NoError(t, pub.Publish(ctx, "work", "A", nil))

			broken := make(chan struct{})
			c, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: "work", Actor: "W", Stream: stream}, func(ctx context.Context, d *rabbit.Delivery) {
				stream.Emit(lab.Event{Kind: lab.Started, Task: d.Task, Queue: "work", Actor: "W"})
				if !d.Redelivered {
					<-broken // the key comes while the worker holds A
					time.Sleep(50 * time.Millisecond)
					assert.Error(t, d.Ack(), "the ack goes nowhere: its channel is gone")
					return
				}
				assert.NoError(t, d.Ack())
				stream.Emit(lab.Event{Kind: lab.Succeeded, Task: d.Task, Queue: "work", Actor: "W"})
			})
			require.NoError(t, err)
			if fault == "close the holding channel" {
				what, ok := f.CloseHolding(ctx, 10*time.Second)
				require.True(t, ok, "a worker held A")
				assert.Equal(t, "W's channel on work, holding task A unacked", what)
			} else {
				require.Eventually(t, func() bool { return f.Holding() > 0 }, 10*time.Second, 10*time.Millisecond)
				assert.Equal(t, 1, f.CutConnections(), "the consumer's connection, not the session's or the publisher's")
			}
			close(broken)
			require.NoError(t, s.Watch().WaitSettled(ctx, stream, nil))
			c.Stop()

			tasks := stream.Finish()
			require.Len(t, tasks, 1)
			assert.Equal(t, lab.FateDone, tasks[0].Fate)
			assert.Equal(t, 1, c.Reconnects())
			mu.Lock()
			defer mu.Unlock()
			var kinds []lab.Kind
			for _, e := range rec.Events {
				kinds = append(kinds, e.Kind)
			}
			assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Started, lab.Redelivered, lab.Started, lab.Succeeded, lab.Summary}, kinds)
		})
	}
}

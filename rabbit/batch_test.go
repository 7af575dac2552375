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
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// A batch waits in this process, unsettled: when the consumer's
// connection is cut mid-batch, its acks fail, the broker hands those
// messages out again, and every task still ends done, accounted for.
func TestBatchSurvivesACutConnection(t *testing.T) {
	ctx := t.Context()
	s := rabbittest.Session(t, flowSpeed)
	rec := &labtest.Recorder{}
	stream := lab.NewStream("test", lab.Rabbit, lab.NewClock(flowSpeed), rec)
	b, err := rabbit.NewFlow(ctx, s, stream)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(context.WithoutCancel(ctx)) })
	require.NoError(t, b.Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
	var cut sync.Once
	require.NoError(t, b.ConsumeBatch(ctx, flow.Consumer{Queue: "work", Actor: "Batcher"}, flow.Batch{
		Size: 3, Wait: time.Second,
		Handle: func(_ context.Context, ds []*flow.Delivery) []flow.Decision {
			cut.Do(b.Interrupt) // the first batch's acks go to a dead channel
			decs := make([]flow.Decision, len(ds))
			for i, d := range ds {
				_ = stream.Attempt(d.Event("Batcher"), func() error { return nil })
				decs[i] = flow.Ack()
			}
			return decs
		}}))
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		require.NoError(t, b.Publish(ctx, "Producer", "work", id))
	}
	require.NoError(t, b.Wait(ctx))
	stream.Finish()
	events := rec.Events()
	labtest.AssertAccounted(t, events)
	assert.NotEmpty(t, labtest.OfKind(events, lab.Redelivered), "the cut batch came back")
	for _, r := range labtest.Fates(events) {
		assert.Equal(t, lab.FateDone, r.Fate, r.ID)
	}
}

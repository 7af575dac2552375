package lessons

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// rabbitSpeed keeps broker lessons quick: 1 s of lesson time is 50 ms.
const rabbitSpeed = 20

// realSlackMs is how late, in real milliseconds, a broker hop or a timer
// may be on a shared and loaded 2-core machine before a timing assertion
// calls it wrong. Timing tests run at a speed where the effect they check
// is much larger than this slack in lesson time (slack × speed).
const realSlackMs = 250

// runRabbit runs lesson l against the test broker (skipping without one,
// failing under QLAB_REQUIRE_BROKER=1) and returns its events.
func runRabbit(t *testing.T, l Lesson, opts Options) ([]lab.Event, Result) {
	t.Helper()
	opts.Backend = lab.Rabbit
	opts.Broker = rabbittest.NeedBroker(t)
	if opts.Speed == 0 {
		opts.Speed = rabbitSpeed
		if l.TestSpeed > 0 {
			opts.Speed = l.TestSpeed
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rec labtest.Recorder
	res, err := Run(ctx, l, opts, &rec)
	require.NoError(t, err)
	return rec.Events(), res
}

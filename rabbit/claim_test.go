package rabbit_test

import (
	"context"
	"errors"
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

// openAs opens a session under names (a person's prefix), closed with t.
func openAs(t *testing.T, names rabbit.Names) *rabbit.Session {
	t.Helper()
	s, err := rabbit.Open(testCtx(t), rabbittest.NeedBroker(t), names, lab.NewClock(1), rabbittest.Logger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// TestExactNamesAreClaimedAtomically: two runs under the same --prefix
// declare at the same moment, six times over. Exactly one of each pair
// may declare; the other is refused with a *ClaimedError and declares
// nothing. Without the claim both passed the "already exists" check in
// most pairs and used, parked and deleted each other's queues.
func TestExactNamesAreClaimedAtomically(t *testing.T) {
	rabbittest.NeedBroker(t)
	for range 6 {
		base := rabbit.RunNames() // a fresh prefix for this pair, not the run id
		names, err := rabbit.PersonNames(base.Run + "-pair")
		require.NoError(t, err)
		a, b := openAs(t, names), openAs(t, names)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, s := range []*rabbit.Session{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Topo().Declare(testCtx(t), emailLoopTopology(time.Hour))
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			var claimed *rabbit.ClaimedError
			switch {
			case err == nil:
				won++
			case errors.As(err, &claimed):
				assert.Contains(t, err.Error(), "another run is using the names under prefix "+names.Prefix)
			default:
				t.Errorf("refused otherwise than by the claim: %v", err)
			}
		}
		assert.Equal(t, 1, won, "exactly one run of the pair declares: %v", errs)
	}
}

// TestClaimIsReleasedWithTheRun: once the run that held the names ends,
// the next run under them declares.
func TestClaimIsReleasedWithTheRun(t *testing.T) {
	rabbittest.NeedBroker(t)
	names, err := rabbit.PersonNames(rabbit.RunNames().Run + "-next")
	require.NoError(t, err)
	first := openAs(t, names)
	require.NoError(t, first.Topo().Declare(testCtx(t), emailLoopTopology(time.Hour)))
	second := openAs(t, names)
	other := flow.Topology{Queues: []flow.Queue{{Name: "other", Role: flow.Work}}}
	var claimed *rabbit.ClaimedError
	require.ErrorAs(t, second.Topo().Declare(testCtx(t), other), &claimed, "even queues the first did not declare")
	require.NoError(t, first.Close(testCtx(t)))
	require.NoError(t, second.Topo().Declare(testCtx(t), other))
}

// TestCleanRefusesWhileTheNamesAreClaimed: `qlab broker clean --prefix P`
// under a live run whose queues have no consumer (a wait queue, a DLQ)
// deletes nothing while the run holds its claim.
func TestCleanRefusesWhileTheNamesAreClaimed(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	names, err := rabbit.PersonNames(rabbit.RunNames().Run + "-live")
	require.NoError(t, err)
	s := openAs(t, names)
	topo := emailLoopTopology(time.Hour)
	require.NoError(t, s.Topo().Declare(testCtx(t), topo))
	_, err = rabbit.Clean(testCtx(t), url, names, []flow.Topology{topo}, false)
	require.ErrorIs(t, err, rabbit.ErrInUse)
	n, err := s.Topo().Depth(testCtx(t), emailWait)
	require.NoError(t, err, "the wait queue is still there")
	assert.Zero(t, n)
}

// TestClaimIsTakenAgainAfterALostConnection: a run under exact names whose
// session connection is lost takes its claim again on the new one (the
// broker drops the old connection's claim a moment later) and goes on.
func TestClaimIsTakenAgainAfterALostConnection(t *testing.T) {
	rabbittest.NeedBroker(t)
	names, err := rabbit.PersonNames(rabbit.RunNames().Run + "-again")
	require.NoError(t, err)
	s := openAs(t, names)
	require.NoError(t, s.Topo().Declare(testCtx(t), emailLoopTopology(time.Hour)))
	for range 3 {
		require.NoError(t, s.Connection().Close())
		_, err := s.Topo().Depth(testCtx(t), emailQueue)
		require.NoError(t, err)
		require.NoError(t, s.Err())
	}
	other := openAs(t, names)
	var claimed *rabbit.ClaimedError
	require.ErrorAs(t, other.Topo().Declare(testCtx(t), flow.Topology{Queues: []flow.Queue{{Name: "x", Role: flow.Work}}}), &claimed,
		"the run still holds its names")
}

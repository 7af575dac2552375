package storetest_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/storetest"
)

// checkThenAct is the claim people write first, and wrong: read the row,
// and if it is QUEUED, set it SENDING. Between the read and the write
// (runtime.Gosched stands for the round trip to a database) another worker
// reads QUEUED too, and both send. The write underneath is the map's own,
// its result ignored, as an unconditional UPDATE … WHERE id=? would be.
type checkThenAct struct{ *store.Memory }

func (s checkThenAct) Claim(ctx context.Context, id string) (bool, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r.Status != store.Queued {
		return false, err
	}
	runtime.Gosched()
	_, err = s.Memory.Claim(ctx, id)
	return err == nil, err
}

// TestClaimRaceCatchesCheckThenAct proves the suite's claim check can
// fail: against a check-then-act claim it reports more than one winner.
func TestClaimRaceCatchesCheckThenAct(t *testing.T) {
	wrong := checkThenAct{store.NewMemory()}
	caught := 0
	for i := range 5 {
		if err := storetest.CheckClaimRace(t.Context(), wrong, fmt.Sprintf("r%d", i)); err != nil {
			t.Log(err)
			caught++
		}
	}
	assert.Positive(t, caught, "a check-then-act claim passed the claim race")

	right := store.NewMemory()
	for i := range 5 {
		require.NoError(t, storetest.CheckClaimRace(t.Context(), right, fmt.Sprintf("r%d", i)))
	}
}

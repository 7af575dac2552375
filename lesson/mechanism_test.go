package lesson

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
)

// This test binary links no broker (TestLayering keeps it so): a broker
// run here says which package registers the broker's mechanism, and what
// the broker can do is unknown, not guessed.
func TestOpenNeedsTheBrokerMechanismLinkedIn(t *testing.T) {
	env := &Env{Stream: lab.NewStream("q00", lab.Rabbit, lab.NewClock(1))}
	_, err := env.Open(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lesson/rabbitenv")
	assert.Zero(t, FeaturesOf(lab.Rabbit))
	assert.True(t, FeaturesOf(lab.InMem).ExactTime, "the in-memory mechanism is built in")
}

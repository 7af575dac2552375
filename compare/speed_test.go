package compare

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lessons"
)

// A lesson whose waits are the seed's minutes (Q14) compares at its own
// speed, and compare's lesson-time workloads follow it: depth samples as
// often in real time as another lesson's at 20×, and the interruption
// where its retries wait (issue 20: 2 s of lesson time is before Q14's
// first retry is due). The others keep 20×, 2 s and 250 ms.
func TestALessonComparesAtItsOwnSpeed(t *testing.T) {
	q14, err := lessons.Parse("14")
	require.NoError(t, err)
	q10, err := lessons.Parse("10")
	require.NoError(t, err)

	assert.Equal(t, 400.0, SpeedOf(q14))
	assert.Equal(t, 5*time.Second, stretch(q14, sampleEvery), "12.5 ms of real time at 400×, as 250 ms at 20×")
	assert.Equal(t, 200*time.Second, interruptionOf(q14), "while A's 2-minute retry holds E back")

	assert.Equal(t, float64(DefaultSpeed), SpeedOf(q10))
	assert.Equal(t, sampleEvery, stretch(q10, sampleEvery))
	assert.Equal(t, interruptAt, interruptionOf(q10))
}

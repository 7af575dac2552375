package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Decide and Waits are the same arithmetic TestTheDocumentsRetryArithmetic
// walks by hand: retries++ before getRetryDelay.
func TestDecideIsTheDocumentsCatchBlock(t *testing.T) {
	retries, delay, dead := Decide(0)
	assert.Equal(t, []any{1, 30 * time.Second, false}, []any{retries, delay, dead}, "the first retry reads RETRY_DELAYS[1]")
	retries, _, dead = Decide(MaxRetries - 1)
	assert.Equal(t, []any{MaxRetries, true}, []any{retries, dead}, "the fifth failure goes to the DLQ")
	assert.Equal(t, []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}, Waits())
	assert.Len(t, Waits(), MaxRetries-1, "MAX_RETRIES = 5 gives four retries, not the three the text says")
	assert.NotContains(t, Waits(), RetryDelays[0], "10 s is never used")
}

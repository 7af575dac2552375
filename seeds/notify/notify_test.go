package notify

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The document's own arithmetic: retries++ runs before getRetryDelay, so
// the first retry waits RETRY_DELAYS[1] (30 s), 10 s is never used, and
// MAX_RETRIES = 5 leaves four retries (the text says three).
func TestTheDocumentsRetryArithmetic(t *testing.T) {
	var waits []time.Duration
	retries := 0
	for {
		retries++ // job.retries++ in the catch block
		if retries >= MaxRetries {
			break // nack → DLQ
		}
		waits = append(waits, RetryDelay(retries))
	}
	assert.Equal(t, []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}, waits)
	assert.NotContains(t, waits, 10*time.Second)
	assert.Equal(t, 5*time.Minute, RetryDelay(99), "past the end, the last delay")
	assert.Equal(t, 10*time.Second, RetryDelay(-1), "a negative count reads the first delay")
}

func TestTopologyIsTheDocuments(t *testing.T) {
	top := Topology(0)
	require.NoError(t, top.Check())
	q, ok := top.Queue(EmailQueue)
	require.True(t, ok)
	assert.Equal(t, MaxLength, q.MaxLength)
	assert.Equal(t, DLQ, top.DeadLetterTarget(EmailQueue), "a nack on email-queue goes to email-dlq, not to the retry queue")
	assert.Equal(t, EmailQueue, top.DeadLetterTarget(RetryQueue))
	small, _ := Topology(10).Queue(EmailQueue)
	assert.Equal(t, 10, small.MaxLength)
}

func TestDecodeJob(t *testing.T) {
	good := NewJob("n01", time.UnixMilli(1707217200000))
	j, err := DecodeJob(good.Encode())
	require.NoError(t, err)
	assert.Equal(t, good, j)

	for name, body := range map[string]string{
		"not json":     `{"type":`,
		"no id":        `{"type":"notification","data":{"to":"a@example.com"}}`,
		"no recipient": `{"type":"notification","data":{"notificationId":"x"}}`,
		"negative":     `{"type":"notification","data":{"notificationId":"x","to":"a@b"},"retries":-4}`,
	} {
		_, err := DecodeJob([]byte(body))
		assert.ErrorIs(t, err, ErrBadJob, name)
	}
	_, err = DecodeJob([]byte(`{"type":"verification","data":{"notificationId":"v","email":"u@example.com"}}`))
	assert.False(t, errors.Is(err, ErrBadJob), "a verification job names its recipient in data.email")
}

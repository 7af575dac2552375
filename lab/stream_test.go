package lab

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStreamAttemptReportsStartAndOutcome(t *testing.T) {
	var rec Recorder
	s := NewStream("q00", InMem, NewClock(1), &rec)
	at := Event{Task: "C", Queue: "queue", Actor: "W", Attempt: 2}

	assert.NoError(t, s.Attempt(at, func() error { return nil }))
	boom := errors.New("boom")
	assert.ErrorIs(t, s.Attempt(at, func() error { return boom }), boom)

	var got []string
	for _, e := range rec.Events {
		assert.Equal(t, "C", e.Task)
		assert.Equal(t, "queue", e.Queue)
		assert.Equal(t, "W", e.Actor)
		assert.Equal(t, 2, e.Attempt)
		got = append(got, string(e.Kind)+":"+e.Note)
	}
	assert.Equal(t, []string{"started:", "succeeded:", "started:", "failed:boom"}, got)
}

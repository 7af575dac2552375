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

// Emit reads the clock before it takes the lock, so an emitter that read
// the clock earlier can be sequenced after one that read it later; its
// stamp is then raised to the later one and t_ms never goes back along Seq.
func TestStreamStampsNeverGoBackAlongSeq(t *testing.T) {
	var rec Recorder
	s := NewStream("q00", InMem, NewClock(1), &rec)
	es := []Event{{Kind: Enqueued, Task: "A"}, {Kind: Enqueued, Task: "B"}, {Kind: Started, Task: "A"}}
	s.mu.Lock()
	s.emitLocked(&es[0], 10) // read the clock at 10 ms, locked first
	s.emitLocked(&es[1], 7)  // read it at 7 ms, locked second
	s.emitLocked(&es[2], 12)
	s.handOver(es...) // releases mu

	var got [][2]int64
	for _, e := range rec.Events {
		got = append(got, [2]int64{int64(e.Seq), e.TMs})
	}
	assert.Equal(t, [][2]int64{{1, 10}, {2, 10}, {3, 12}}, got)
}

package lesson

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeActsAnswersEachKeyUntilStopped: every key gets its answer, in
// order; stop waits for an answer under way; a key sent after stop gets
// none; a second stop is harmless; nil acts starts nothing.
func TestServeActsAnswersEachKeyUntilStopped(t *testing.T) {
	acts := make(chan Act)
	var got []string
	inAnswer, release := make(chan struct{}), make(chan struct{})
	stop := ServeActs(acts, func(a Act) {
		got = append(got, a.Key)
		if a.Key == "v" {
			close(inAnswer)
			<-release
		}
		a.Reply("took " + a.Key)
	})
	answer := make(chan string, 1)
	acts <- Act{Key: "k", Answer: answer}
	require.Equal(t, "took k", <-answer)
	acts <- Act{Key: "v", Answer: answer}
	<-inAnswer
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stop returned while an answer was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return once the answer had")
	}
	assert.Equal(t, "took v", <-answer)
	select {
	case acts <- Act{Key: "k"}:
		t.Fatal("a key was taken after stop")
	case <-time.After(50 * time.Millisecond):
	}
	stop()
	assert.Equal(t, []string{"k", "v"}, got)

	ServeActs(nil, func(Act) { t.Fatal("answered without acts") })()
}

// TestServeActsEndsWhenActsClose: the front end closing acts ends the
// goroutine; stop then returns at once.
func TestServeActsEndsWhenActsClose(t *testing.T) {
	acts := make(chan Act)
	stop := ServeActs(acts, func(Act) {})
	close(acts)
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stop hung after acts closed")
	}
}

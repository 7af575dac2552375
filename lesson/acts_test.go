package lesson

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestServeActsAnswersUntilStopped: every key sent before stop is
// answered, in order; stop waits for the goroutine, may be called twice,
// and a key sent after it finds nobody reading.
func TestServeActsAnswersUntilStopped(t *testing.T) {
	act := make(chan Act)
	var got []string
	stop := ServeActs(act, func(a Act) {
		got = append(got, a.Key)
		a.Reply("saw " + a.Key)
	})
	for _, k := range []string{"k", "v"} {
		answer := make(chan string, 1)
		act <- Act{Key: k, Answer: answer}
		assert.Equal(t, "saw "+k, <-answer)
	}
	stop()
	stop()
	assert.Equal(t, []string{"k", "v"}, got)
	select {
	case act <- Act{Key: "k"}:
		t.Fatal("a key was taken after stop")
	default:
	}
}

// TestServeActsEndsWhenActCloses: a closed act ends the goroutine; stop
// then returns at once.
func TestServeActsEndsWhenActCloses(t *testing.T) {
	act := make(chan Act)
	stop := ServeActs(act, func(Act) { t.Error("no key was pressed") })
	close(act)
	stop()
}

// TestServeActsWithoutKeys: without a channel nothing runs, and stop is
// safe to call.
func TestServeActsWithoutKeys(t *testing.T) {
	ServeActs(nil, func(Act) { t.Error("no key was pressed") })()
}

package inmem

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestTrackerIdleFollowsTheCount(t *testing.T) {
	var tr tracker
	assert.True(t, closed(tr.idle()), "nothing in flight")
	tr.add()
	tr.add()
	first := tr.idle()
	tr.done()
	assert.False(t, closed(first), "one still in flight")
	tr.done()
	assert.True(t, closed(first))
	tr.add()
	second := tr.idle()
	assert.False(t, closed(second), "work restarted: a fresh channel")
	tr.done()
	assert.True(t, closed(second))
}

// Many goroutines crossing zero and back must never close the idle
// channel of a period in which one piece of work was held throughout.
func TestTrackerConcurrentCrossings(t *testing.T) {
	var tr tracker
	for round := 0; round < 50; round++ {
		tr.add() // held until the workers finish
		held := tr.idle()
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					tr.add()
					tr.done()
				}
			}()
		}
		wg.Wait()
		assert.False(t, closed(held), "round %d: idle while work was held", round)
		tr.done()
		assert.True(t, closed(tr.idle()))
		assert.True(t, closed(held), "round %d: the held period's channel closes at zero", round)
	}
}

// Work crossing zero from several goroutines at once: every idle channel
// handed out while work was in flight must be closed once all of it ended.
func TestTrackerIdleChannelsCloseAfterRacingCrossings(t *testing.T) {
	var tr tracker
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				tr.add()
				tr.done()
			}
		}()
	}
	var handed []<-chan struct{}
	for range 2000 {
		tr.add()
		handed = append(handed, tr.idle())
		tr.done()
	}
	wg.Wait()
	for i, c := range handed {
		if !closed(c) {
			t.Fatalf("idle channel %d still open with nothing in flight", i)
		}
	}
}

package lab

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blocked is a sink whose reader is stuck until open is closed.
type blocked struct {
	open chan struct{}
	got  []Event // written by the sink's goroutine, read after Finish
}

func (b *blocked) Emit(e Event) {
	<-b.open
	b.got = append(b.got, e)
}

// A reader that stops reading holds up no worker: the stream keeps its
// Buffer of events for it, drops and counts the rest, and every other
// sink has every event; once the reader reads again it gets the first
// events, in order, and Finish has waited for it.
func TestStuckReaderMissesEventsAndStallsNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &blocked{open: make(chan struct{})}
		view := NewBounded(stuck, 4)
		var rec Recorder
		s := NewStream("q00", InMem, NewClock(1), view, &rec)

		for i := range 100 {
			s.Emit(Event{Kind: Enqueued, Task: fmt.Sprint(i)}) // returns although the reader is stuck
		}
		synctest.Wait()
		assert.Len(t, rec.Events, 100, "an inline recorder has every event at once")
		missed := view.Missed()
		assert.GreaterOrEqual(t, missed, 100-4-1, "at most the buffer and the event in hand are kept")
		assert.LessOrEqual(t, missed, 100-4)

		finished := make(chan []TaskRecord)
		go func() { finished <- s.Finish() }()
		synctest.Wait()
		select {
		case <-finished:
			t.Fatal("Finish returned before the reader had what was queued for it")
		default:
		}
		close(stuck.open)
		tasks := <-finished
		require.Len(t, tasks, 100)
		assert.Equal(t, s.Missed(), view.Missed())
		assert.LessOrEqual(t, len(stuck.got), 4+1, "at most the buffer and the event in hand")
		for i := 1; i < len(stuck.got); i++ {
			assert.Less(t, stuck.got[i-1].Seq, stuck.got[i].Seq, "what the reader got is in Seq order")
		}
		assert.Equal(t, 200, len(stuck.got)+view.Missed(), "every event was delivered or counted")
	})
}

// A plain sink that is slow misses nothing: its queue grows, the emitters
// go on, and Finish waits until it has every event.
func TestSlowPlainSinkGetsEverythingWithoutStallingEmitters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &blocked{open: make(chan struct{})}
		s := NewStream("q00", InMem, NewClock(1), slow)
		for i := range 50 {
			s.Emit(Event{Kind: Enqueued, Task: fmt.Sprint(i)})
		}
		synctest.Wait() // every Emit returned while the sink is stuck
		close(slow.open)
		s.Finish()
		require.Len(t, slow.got, 100, "50 enqueued and 50 summaries")
		assert.Equal(t, Summary, slow.got[99].Kind)
		assert.Zero(t, s.Missed())
	})
}

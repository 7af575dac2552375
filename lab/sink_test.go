package lab

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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
		assert.Equal(t, 100-4, missed, "at most the buffer is kept, the reader's hands included")

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
		assert.LessOrEqual(t, len(stuck.got), 4, "at most the buffer, the reader's hands included")
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

// held is how many events o holds: queued, and in its goroutine's hands.
func held(s *Stream, o *outbox) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(o.queue) + o.inHand
}

// A plain sink that falls far behind holds the emitters at its backlog
// limit instead of queueing without end (a run of 100,000 tasks logged to
// a slow terminal would otherwise keep them all in memory): the emitter
// waits, and goes on once the sink reads again, and the sink misses
// nothing.
func TestPlainSinkFarBehindHoldsTheEmittersAtItsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &blocked{open: make(chan struct{})}
		s := NewStream("q00", InMem, NewClock(1), slow)
		const n = 3 * backlogLimit
		emitted := make(chan struct{})
		go func() {
			defer close(emitted)
			for i := range n {
				s.Emit(Event{Kind: Enqueued, Task: fmt.Sprint(i)})
			}
		}()
		synctest.Wait()
		select {
		case <-emitted:
			t.Fatalf("%d events queued for a stuck sink: the emitter never waited", n)
		default:
		}
		assert.LessOrEqual(t, held(s, s.outboxes[0]), 2*backlogLimit, "a full queue, and a batch in the sink's hands")

		close(slow.open)
		<-emitted
		s.Finish()
		require.Len(t, slow.got, 2*n, "every enqueued and every summary")
		for i := 1; i < len(slow.got); i++ {
			require.Equal(t, slow.got[i-1].Seq+1, slow.got[i].Seq, "in Seq order, none missing")
		}
	})
}

// valve is a sink that takes one event per token.
type valve struct {
	tokens chan struct{}
	got    []Event
}

func (v *valve) Emit(e Event) {
	<-v.tokens
	v.got = append(v.got, e)
}

// Finish's summaries wait for room like any event: a stuck sink never
// has more than its backlog limit of them queued, and a batch in hand.
func TestFinishQueuesSummariesWithinTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3 * backlogLimit
		v := &valve{tokens: make(chan struct{}, n)}
		for range n {
			v.tokens <- struct{}{} // room for the enqueued events, none for a summary
		}
		s := NewStream("q00", InMem, NewClock(1), v)
		for i := range n {
			s.Emit(Event{Kind: Enqueued, Task: fmt.Sprint(i)})
		}
		finished := make(chan []TaskRecord)
		go func() { finished <- s.Finish() }()
		synctest.Wait()
		select {
		case <-finished:
			t.Fatal("Finish returned before the sink had its summaries")
		default:
		}
		assert.LessOrEqual(t, held(s, s.outboxes[0]), 2*backlogLimit, "summaries held: a full queue, and a batch in hand")

		close(v.tokens)
		require.Len(t, <-finished, n)
		require.Len(t, v.got, 2*n)
		assert.Equal(t, Summary, v.got[2*n-1].Kind)
	})
}

// tally is a plain sink that counts what it was handed.
type tally struct {
	mu  sync.Mutex
	got int
}

func (c *tally) Emit(Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got++
}

func (c *tally) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got
}

// A lone event reaches its plain sink within drainDelay, and at once when
// the stream flushes: Flush starts the delivery rather than wait for the
// timer, so a reader mid-run, and Finish, lose no time to it.
func TestFlushDeliversWithoutWaitingForTheTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c tally
		s := NewStream("q00", InMem, NewClock(1), &c)
		start := time.Now()
		s.Emit(Event{Kind: Enqueued, Task: "A"})
		s.Flush()
		assert.Equal(t, 1, c.n(), "Flush returned before the sink had the event")
		assert.Zero(t, time.Since(start), "Flush waited for the timer")

		s.Emit(Event{Kind: Enqueued, Task: "B"})
		time.Sleep(drainDelay)
		synctest.Wait()
		assert.Equal(t, 2, c.n(), "the event waited longer than drainDelay")
	})
}

// A busy run's events do not wait for the timer: once a plain sink has
// startAt events queued (below its backlog limit), or a Bounded one half
// its Buffer, its goroutine starts at once, before emitters wait or
// events drop.
func TestNearlyFullQueueStartsItsDeliveryAtOnce(t *testing.T) {
	for _, bounded := range []bool{false, true} {
		t.Run(fmt.Sprint("bounded=", bounded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var c tally
				var sink Sink = &c
				limit := backlogLimit
				if bounded {
					sink, limit = NewBounded(&c, 8), 8
				}
				s := NewStream("q00", InMem, NewClock(1), sink)
				n := s.outboxes[0].startAt()
				require.Less(t, n, limit, "the goroutine starts only once emitters wait or events drop")
				for i := range n {
					s.Emit(Event{Kind: Enqueued, Task: fmt.Sprint(i)})
				}
				synctest.Wait() // no lesson time passes: the timer has not fired
				assert.Equal(t, n, c.n(), "the sink waited for the timer")
				assert.Zero(t, s.Missed())
				s.Finish()
			})
		})
	}
}

package inmem

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A queue with room for more than its channel keeps FIFO order across
// the channel and the overflow list behind it, whether the worker drains
// it after every task was put or while they are being put.
func TestLargeQueueKeepsOrderPastItsChannel(t *testing.T) {
	n := 3*chanRoom + overflowBlock/2
	for _, late := range []bool{true, false} {
		t.Run(fmt.Sprintf("worker after the puts %v", late), func(t *testing.T) {
			var rec lab.Recorder
			sys := newTestSystem(&rec, lab.Plan{})
			q := sys.Queue("q", n)
			var got []string
			start := func() {
				sys.Worker("W", q, func(t *Task) { got = append(got, t.ID) })
			}
			if !late {
				start()
			}
			var want []string
			for i := range n {
				id := fmt.Sprintf("T%05d", i)
				want = append(want, id)
				q.Enqueue("P", id)
			}
			if late {
				assert.Equal(t, n, q.Len())
				start()
			}
			require.NoError(t, sys.Wait(context.Background()))
			assert.Equal(t, want, got)
			assert.Zero(t, q.Len())
		})
	}
}

// fullQueueAndAPut fills a queue with room for n tasks, then puts task
// "last" from a goroutine, on a new system; put is closed once that put returns. It
// returns when the put is blocked (call it in a synctest bubble).
func fullQueueAndAPut(n int) (sys *System, q *Queue, put chan struct{}) {
	sys = newTestSystem(new(lab.Recorder), lab.Plan{})
	q = sys.Queue("q", n)
	for i := range n {
		q.Enqueue("P", fmt.Sprintf("T%05d", i))
	}
	put = make(chan struct{})
	go func() {
		q.Enqueue("P", "last")
		close(put)
	}()
	synctest.Wait()
	return sys, q, put
}

// A full large queue makes a put wait until a worker takes a task, as a
// small one does, and the waiting task keeps its place at the tail.
func TestFullLargeQueueMakesAPutWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := chanRoom + 10
		sys, q, put := fullQueueAndAPut(n)
		select {
		case <-put:
			t.Fatal("a put into a full queue did not wait")
		default:
		}
		var got []string
		sys.Worker("W", q, func(t *Task) { got = append(got, t.ID) })
		<-put
		require.NoError(t, sys.Wait(context.Background()))
		require.Len(t, got, n+1)
		assert.Equal(t, "T00000", got[0])
		assert.Equal(t, "last", got[n])
	})
}

// A put waiting on a full large queue gives up when the system stops.
func TestFullLargeQueuePutStopsWithTheSystem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := chanRoom + 1
		sys, q, put := fullQueueAndAPut(n)
		sys.Stop()
		<-put
		assert.Equal(t, n, q.Len())
	})
}

// A crash reports every task of a large queue lost, in queue order, and
// peeking at a large holding queue reads its head and leaves it whole.
func TestLargeQueueCrashAndPeek(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec lab.Recorder
		sys := newTestSystem(&rec, lab.Plan{})
		n := 2*chanRoom + 3
		q := sys.HoldingQueue("dlq", n)
		for i := range n {
			q.Enqueue("P", fmt.Sprintf("T%05d", i))
		}
		head := q.peek(2)
		require.Len(t, head, 2)
		assert.Equal(t, "T00000", head[0].Task)
		assert.Equal(t, "T00001", head[1].Task)
		assert.Equal(t, n, q.Len())

		sys.Crash("process")
		lost := labtest.OfKind(rec.Events, lab.Lost)
		require.Len(t, lost, n)
		for i, e := range lost {
			assert.Equal(t, fmt.Sprintf("T%05d", i), e.Task)
		}
		assert.Zero(t, q.Len())
	})
}

// The overflow list gives back its blocks as it empties, keeping one.
func TestOverflowShrinksWithItsContents(t *testing.T) {
	var o overflow
	for round := range 3 {
		for i := range 5 * overflowBlock {
			o.push(&Task{ID: fmt.Sprint(round, i)})
		}
		for i := range 5 * overflowBlock {
			require.Equal(t, fmt.Sprint(round, i), o.front().ID)
			o.pop()
		}
		assert.Zero(t, o.n)
		assert.Nil(t, o.head)
		assert.NotNil(t, o.spare)
	}
}

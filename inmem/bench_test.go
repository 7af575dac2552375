package inmem

import (
	"context"
	"fmt"
	"testing"

	"github.com/queuelab/qlab/lab"
)

// The two benchmarks move b.N messages from one producer to one consumer
// through a queue with room for benchCap, so `go test -bench . ./inmem`
// compares the lab's path with the bare channel it is built on.
const benchCap = 1024

// benchIDs are the task ids the lab benchmark cycles through, so the
// ledger stays the size of a long-running lab instead of growing with b.N.
var benchIDs = func() []string {
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = fmt.Sprintf("T%04d", i)
	}
	return ids
}()

// BenchmarkRawChannel is the floor: a buffered channel, a producer and a
// consumer goroutine, nothing else.
func BenchmarkRawChannel(b *testing.B) {
	ch := make(chan *Task, benchCap)
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	t := &Task{ID: "T"}
	b.ResetTimer()
	for range b.N {
		ch <- t
	}
	close(ch)
	<-done
	reportRate(b)
}

// BenchmarkQueue is the lab's path for the same work: Queue.Enqueue (an
// enqueued event stamped by the Stream, observed by the Ledger, handed to a
// discarding sink, the in-flight count), a Worker taking each task, and
// Wait until the System is idle.
func BenchmarkQueue(b *testing.B) {
	discard := lab.SinkFunc(func(lab.Event) {})
	stream := lab.NewStream("bench", lab.InMem, lab.NewClock(1), discard)
	sys := New(context.Background(), stream, lab.Plan{})
	q := sys.Queue("queue", benchCap)
	sys.Worker("Worker", q, func(*Task) {})
	b.ResetTimer()
	for i := range b.N {
		q.Enqueue("Producer", benchIDs[i%len(benchIDs)])
	}
	if err := sys.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	reportRate(b)
}

// reportRate adds messages per second next to ns/op.
func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

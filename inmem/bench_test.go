package inmem

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
)

// The benchmarks move b.N messages from one producer to one consumer
// through a queue with room for benchCap. Read them as a ladder, cheapest
// first (`go test -run '^$' -bench 'Queue|Raw' ./inmem`):
//
//   - BenchmarkRawChannel resends one preallocated pointer: the channel alone.
//   - BenchmarkRawChannelAlloc allocates a task per message, as any queue
//     that creates tasks must.
//   - BenchmarkRawContract adds the event contract by hand: three stamped,
//     sequenced events per message (enqueued, started, succeeded), each
//     observed by a ledger and handed to a sink, all under one lock.
//   - BenchmarkQueue is the lab's path doing the same work.
//
// BenchmarkQueue ÷ BenchmarkRawContract is the fair measure of what the
// lab's building blocks cost; the two raw channels are floors no
// accounted-for queue can reach.
const benchCap = 1024

// benchIDs are the task ids the benchmarks cycle through, so a ledger stays
// the size of a long-running lab instead of growing with b.N.
var benchIDs = func() []string {
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = fmt.Sprintf("T%04d", i)
	}
	return ids
}()

// BenchmarkRawChannel is the floor: a buffered channel, a producer and a
// consumer goroutine, one pointer sent over and over.
func BenchmarkRawChannel(b *testing.B) {
	ch := make(chan *Task, benchCap)
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	t := &Task{ID: "T"}
	b.ReportAllocs()
	startCPU(b)
	for range b.N {
		ch <- t
	}
	close(ch)
	<-done
	reportRate(b)
}

// BenchmarkRawChannelAlloc is BenchmarkRawChannel with a new task per
// message, which the consumer counts as an attempt.
func BenchmarkRawChannelAlloc(b *testing.B) {
	ch := make(chan *Task, benchCap)
	done := make(chan struct{})
	go func() {
		for t := range ch {
			t.Attempt++
		}
		close(done)
	}()
	b.ReportAllocs()
	startCPU(b)
	for i := range b.N {
		ch <- &Task{ID: benchIDs[i%len(benchIDs)]}
	}
	close(ch)
	<-done
	reportRate(b)
}

// BenchmarkRawContract hand-rolls, on a bare channel, the contract the lab
// keeps for the same work: the producer allocates a task and emits
// enqueued; the consumer emits started and succeeded. Each event is
// sequenced, stamped with lesson time, lesson and backend, updates a
// ledger of fates and attempts, and goes to a sink, under one lock.
func BenchmarkRawContract(b *testing.B) {
	c := newRawContract(lab.SinkFunc(func(lab.Event) {}))
	ch := make(chan *Task, benchCap)
	done := make(chan struct{})
	go func() {
		for t := range ch {
			t.Attempt++
			c.emit(lab.Event{Kind: lab.Started, Task: t.ID, Queue: "queue", Actor: "Worker", Attempt: t.Attempt})
			c.emit(lab.Event{Kind: lab.Succeeded, Task: t.ID, Queue: "queue", Actor: "Worker", Attempt: t.Attempt})
		}
		close(done)
	}()
	b.ReportAllocs()
	startCPU(b)
	for i := range b.N {
		id := benchIDs[i%len(benchIDs)]
		t := &Task{ID: id}
		c.emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: "queue", Actor: "Producer"})
		ch <- t
	}
	close(ch)
	<-done
	reportRate(b)
}

// BenchmarkQueue is the lab's path for the same work: Queue.Enqueue (an
// enqueued event through the Stream, the in-flight count), a Worker whose
// handler makes one System.Attempt of each task with the plan's (zero)
// work, as a lesson's worker does (started, then succeeded), and Wait
// until the System is idle.
func BenchmarkQueue(b *testing.B) {
	discard := lab.SinkFunc(func(lab.Event) {})
	stream := lab.NewStream("bench", lab.InMem, lab.NewClock(1), discard)
	sys := New(context.Background(), stream, lab.Plan{})
	q := sys.Queue("queue", benchCap)
	sys.Worker("Worker", q, func(t *Task) {
		if err := sys.Attempt("Worker", q, t); err != nil {
			panic(err) // the zero plan never fails
		}
	})
	b.ReportAllocs()
	startCPU(b)
	for i := range b.N {
		q.Enqueue("Producer", benchIDs[i%len(benchIDs)])
	}
	if err := sys.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	reportRate(b)
}

// reportRate adds messages per second next to ns/op, and the process's
// CPU time per message (user and system, every thread: the garbage
// collector and the scheduler included), which moves much less than wall
// time when other work shares the machine (where cpuTime reads it).
func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if cpu := cpuTime() - benchCPUStart; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

// benchCPUStart is the process's CPU time when the running benchmark's
// timer was last reset (startCPU).
var benchCPUStart time.Duration

// startCPU resets b's timer and notes the CPU time from which reportRate
// counts.
func startCPU(b *testing.B) {
	b.ResetTimer()
	benchCPUStart = cpuTime()
}

// rawContract is the event contract written directly: a sequence number, a
// lesson-time stamp and a ledger entry per event, one lock for all of it.
type rawContract struct {
	sink  lab.Sink
	start time.Time

	mu    sync.Mutex
	seq   int
	tasks map[string]*rawRecord
	order []string
}

// rawRecord is the ledger's line for one task.
type rawRecord struct {
	attempts int
	fate     lab.Fate
	settled  int64
}

func newRawContract(sink lab.Sink) *rawContract {
	return &rawContract{sink: sink, start: time.Now(), tasks: map[string]*rawRecord{}}
}

func (c *rawContract) emit(e lab.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	e.Seq = c.seq
	e.TMs = time.Since(c.start).Milliseconds()
	e.Lesson, e.Backend = "bench", lab.InMem
	r := c.tasks[e.Task]
	if r == nil {
		r = &rawRecord{}
		c.tasks[e.Task] = r
		c.order = append(c.order, e.Task)
	}
	switch e.Kind {
	case lab.Enqueued:
		r.fate, r.settled = lab.FatePending, -1
	case lab.Started:
		r.attempts++
	case lab.Succeeded:
		r.fate, r.settled = lab.FateDone, e.TMs
	}
	c.sink.Emit(e)
}

package lab

import (
	"fmt"
	"testing"
)

// BenchmarkStreamEmit is the part of the in-memory queue's cost that every
// event pays: lock, lesson-time stamp, ledger update, fan-out to a sink.
// Compare it with inmem's BenchmarkQueue to see how much of a message's
// cost is the reporting.
func BenchmarkStreamEmit(b *testing.B) {
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = fmt.Sprintf("T%04d", i)
	}
	s := NewStream("bench", InMem, NewClock(1), SinkFunc(func(Event) {}))
	b.ResetTimer()
	for i := range b.N {
		s.Emit(Event{Kind: Enqueued, Task: ids[i%len(ids)], Queue: "queue", Actor: "Producer"})
	}
}

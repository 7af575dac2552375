package inmem

import "time"

// Produce starts a goroutine named actor that enqueues ids on q, the first
// at once and then one every lesson duration every: a steady stream of
// arrivals instead of a queue filled up front. Until the last id is
// enqueued the System counts the producer as work in flight, so Wait does
// not return in a quiet gap between two arrivals. Stopping the System stops
// the producer; ids not yet enqueued are never created.
func (s *System) Produce(actor string, q *Queue, ids []string, every time.Duration) {
	s.work.add()
	s.begin()
	go func() {
		defer s.end()
		defer s.work.done()
		for i, id := range ids {
			if i > 0 && s.Sleep(s.ctx, every) != nil {
				return
			}
			q.Enqueue(actor, id)
		}
	}()
}

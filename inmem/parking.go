package inmem

// ParkingQueue creates a queue where tasks rest until a person looks at
// them: a dead-letter queue that no worker consumes. A parked task is not
// work in flight, so Wait returns while tasks sit in the queue (with any
// other queue Wait would wait for a consumer that never comes). Crash
// still reports parked tasks lost: they live only in this process's memory.
//
// If a Worker consumes a parking queue, Wait does not wait for the tasks
// it has not taken yet; give a queue that a worker must drain before the
// run ends (a DLQ with an alerting worker) an ordinary Queue instead.
func (s *System) ParkingQueue(name string, capacity int) *Queue {
	q := s.Queue(name, capacity)
	q.parked = true
	return q
}

// QueueNames lists the names of the queues created so far, in creation
// order: what a lesson's design costs in queues.
func (s *System) QueueNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, len(s.queues))
	for i, q := range s.queues {
		names[i] = q.name
	}
	return names
}

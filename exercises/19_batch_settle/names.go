package batchsettle

import (
	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/seeds/raffle"
	"github.com/queuelab/qlab/store"
)

// The seed's queues (seed 004), as seeds/raffle names them.
const (
	Queue      = raffle.Queue      // the users to insert
	RetryQueue = raffle.RetryQueue // holds a retry 10 s, then back to Queue
	DLQ        = raffle.DLQ        // the users that gave up
)

// The batcher's numbers, as lesson Q23 runs them (q23.BatchSize and
// q23.MaxAttempts; a test in package exercises keeps them equal, without
// the lesson's database drivers in every re-check's build).
const (
	BatchSize   = 10 // users a batch holds at most (the seed's 1000, scaled)
	MaxAttempts = 3  // deliveries a user gets; the last failure parks it
)

// UserOf is the user message d carries, as the processors decoded it
// (every message here decodes).
func UserOf(d *flow.Delivery) store.User {
	return store.User{ID: d.Task, Name: "User " + d.Task, Email: d.Task + "@raffle.test"}
}

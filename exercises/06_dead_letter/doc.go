// Package deadletter is exercise 06 (lesson Q08, a dead-letter queue): a
// task that failed all its retries is parked in the dead-letter queue,
// with the reason, instead of being dropped — kept for a person to
// inspect, fix and replay.
//
// Edit dead_letter.go only; check_test.go is the checker (`qlab ex check 6`).
package deadletter

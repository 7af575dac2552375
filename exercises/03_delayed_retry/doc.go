// Package delayedretry is exercise 03 (lessons Q05 and Q07, one delayed
// retry queue): a failed task waits Delay on a timer — time.AfterFunc on
// the lesson clock, no goroutine sleeping — and then goes to retryQueue.
// The worker goes on with the next task at once.
//
// Edit delayed_retry.go only; check_test.go is the checker (`qlab ex check 3`).
package delayedretry

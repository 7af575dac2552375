// Package retryqueue is exercise 02 (lesson Q02, a retry queue and a
// Retry-Worker): when a task fails, move it to retryQueue and go on with
// the next task at once; a second worker gives it one more try there and
// drops it if that fails too.
//
// Edit retry_queue.go only; check_test.go is the checker (`qlab ex check 2`).
package retryqueue

// Package requeue is exercise 01 (lesson Q01, fast retry): when a task
// fails, put it straight back at the tail of the same queue, so the next
// task (D) is not held up by the failed one (C), and give up on a task
// after MaxAttempts attempts instead of looping for ever.
//
// Edit requeue.go only; check_test.go is the checker (`qlab ex check 1`).
package requeue

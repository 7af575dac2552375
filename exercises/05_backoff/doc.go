// Package backoff is exercise 05 (lesson Q07, exponential backoff): the
// wait before a retry doubles with every failed attempt — 1 s after the
// first, 2 s after the second, 4 s after the third — so a struggling
// service gets more and more room to recover.
//
// Edit backoff.go only; check_test.go is the checker (`qlab ex check 5`).
package backoff

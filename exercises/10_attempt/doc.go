// Package attempt is exercise 10 (lesson Q13, x-death vs your own header):
// a worker that retries through a wait queue must know which attempt a
// delivery is, to give up at the limit. When the worker only rejects, the
// broker counts in the x-death header; when it republishes, it counts in
// a header of its own, qlab-retries. Either header can arrive forged or
// broken (another client, a bug, a hand-published message), and a count
// nobody can trust must be refused, not believed.
//
// Edit attempt.go only. names.go holds the header name and the limit;
// check_test.go is the checker (`qlab ex check 10`).
package attempt

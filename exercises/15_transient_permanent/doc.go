// Package classify is exercise 15 (lesson Q19, transient against
// permanent): the birthday worker's verdict on each delivery. A message
// whose body is not JSON goes to the DLQ at once, with a reason, and never
// crashes the worker. A send that failed because the network or the API
// was having a moment (a reset connection, a timeout, 429, a 5xx) is
// retried after 2 s·2ⁿ — 2, 4, 8, 16, 32 s, through the TTL wait queue of
// that delay — and after five retries the message goes to the DLQ. A send
// the API refused for good (400 validation, 401 auth, 404 not found, 422)
// goes to the DLQ at once with the reason: retrying it only repeats the
// refusal.
//
// Edit classify.go only. names.go holds the names, the message and the
// API's error; check_test.go is the checker (`qlab ex check 15`). It runs
// your Handle on an in-memory copy of Q19's topology (a wait queue per
// delay) on two plans of messages, each failing its own way.
package classify

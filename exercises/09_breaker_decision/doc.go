// Package decision is exercise 09 (lesson Q12, a circuit breaker): the
// Mail-Worker's decision for each delivery, around a breaker in front of
// a mail service that goes down. Through the breaker, a dead service is
// left alone while the breaker is open: its calls fail fast, and a fast
// fail goes round the wait queue like any failure, spending one of the
// mail's deliveries. Nothing is lost, and a mail is parked only when its
// deliveries are used up.
//
// Edit decision.go only. names.go holds the queue names and the limit;
// check_test.go is the checker (`qlab ex check 9`).
package decision

// Package atomicclaim is exercise 14 (lesson Q18, the birthday scheduler):
// the worker's claim on a message's status row, written as the SQL it is.
// The scheduler that runs twice publishes some birthday messages twice;
// two workers may hold both copies at once, and a late copy may arrive
// after the message went out. The row in the status table decides which
// copy sends: one UPDATE that moves it from QUEUED to SENDING only while
// it is QUEUED, and the rows it affected say whether this copy won. A
// SELECT followed by an UPDATE (check-then-act) lets both copies through.
//
// Edit claim.go only. names.go holds the table and the DB type;
// check_test.go is the checker (`qlab ex check 14`). It runs your Handle in
// two workers on an in-memory copy of Q18's topology, against a real SQLite
// file (embedded: nothing to install) in which every statement is one round
// trip of 5 ms of lesson time, and reads the rows back at the end.
package atomicclaim

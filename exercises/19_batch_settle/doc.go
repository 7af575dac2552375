// Package batchsettle is exercise 19 (lesson Q23, a batching consumer):
// the RaffleAPI's batcher inserts a batch of users in one statement, and
// one taken email (a unique violation) fails the whole insert. The seed
// then retries the whole batch, and after 3 rounds every healthy user of
// it sits in the DLQ beside the bad one. Settle each message on its own,
// as Broadway's Message.failed does: store the rows that can be stored,
// park the bad one at once with its reason, and retry only what a retry
// can mend (the database away: then every row of the batch).
//
// Edit batch.go only. names.go holds the seed's names and UserOf;
// check_test.go is the checker (`qlab ex check 19`): it runs your
// InsertBatch as the batcher of an in-memory raffle_queue, on a users
// table (the store's in-memory implementation) that already holds some
// of the emails and is away for a while on some plans, and reads the
// table afterwards.
package batchsettle

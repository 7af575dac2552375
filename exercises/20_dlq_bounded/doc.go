// Package dlqbounded is exercise 20 (lesson Q24, the DLQ consumer loop):
// the RaffleAPI's DLQ consumer takes the users parked in raffle_dlq and
// inserts them again, rejecting with requeue on any failure. RabbitMQ
// hands a requeued message straight back, so a body that can never be
// stored (malformed JSON), or any user while the database is still away,
// spins: tens of deliveries and database round trips a second, for ever.
// Bound it: a failed try waits 10 s in a wait queue before the next, a
// user gets MaxTries tries, a body no retry can mend is parked at once,
// and whatever gives up goes to a parking queue nothing consumes, with
// the reason, for a person to look at.
//
// Edit dlq_consumer.go only. names.go holds the queue names, the bound
// and ErrMalformed; check_test.go is the checker (`qlab ex check 20`): it
// runs your Handle as raffle_dlq's consumer in memory, with a database
// that is away for a while (for good on one plan), and reads the users
// table afterwards.
package dlqbounded

// Package serve is `qlab serve`: the seeds' HTTP APIs on loopback, in
// front of the broker, so a student can curl work into the lab and watch
// it arrive in the event stream.
//
//   - POST /api/v1/users {name, email} is seed 004's RaffleAPI: the user is
//     published through the direct raffle_exchange to raffle_queue and the
//     answer is 200 with a fresh UUID, like the seed. The trap it shows: the
//     200 promises nothing is stored yet, and without publisher confirms
//     (--confirms=false, the seed's way) not even that the broker has it.
//     With confirms, a message the broker surely does not have is a 503
//     (outcome not_published or not_stored: sending it again is safe),
//     and one sent whose confirm never came is a 504 (outcome unknown,
//     with its id: the broker may have stored it, and sending it again
//     may store it twice).
//   - POST /api/sequential/schedule-email {to, subject, scheduledTime} is
//     seed 001's: the mail is published to its first hop the way lesson
//     Q11's strategy (c) does (level wait queues, the due time in a header),
//     and seeds/mail's router and mail worker take it on until it is sent.
//
// Bad input is a 400 with a JSON error (415 for a body that is not
// application/json, 408 for one that does not arrive in time) and never
// reaches the broker.
package serve

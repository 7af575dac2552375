// Package nackroute is exercise 11 (lesson Q15, where does a nack go?):
// the notification service of seed 002 draws one route for a failed
// email, declares another and codes a third. Here you write the one that
// works. A transient failure goes to email-retry-queue as a copy with its
// own expiration (the original acked), and the broker sends it back to
// email-queue when the expiration is up; the last failure is a nack,
// requeue false, that email-queue's dead-letter arguments carry through
// the direct exchange email-dlx to email-dlq. Never requeue (a hot loop
// with no wait), never settle a delivery twice (the broker closes the
// channel with 406 PRECONDITION_FAILED).
//
// Edit nack_route.go only. names.go holds the names and the policy;
// check_test.go is the checker (`qlab ex check 11`). It needs a RabbitMQ
// broker (RABBITMQ_URL, else amqp://guest:guest@127.0.0.1:5672/): it
// declares email-queue with your arguments, email-retry-queue, email-dlx
// and email-dlq under a private random prefix, runs your Settle on every
// delivery of a few emails, reads where each one landed (x-death) and
// deletes what it declared. Without a broker the exercise is skipped,
// saying why.
package nackroute

// Package delayedretry is exercise 21 (lesson Q25, the retry the broker
// does itself): seed 003's "NACK + requeue with delay" on RabbitMQ 4.3,
// with no wait queue, no timer and no retry header. A quorum queue
// declared with x-delayed-retry-* holds a message handed back to it for
// min × x-delivery-count (never more than max) before it comes back, and
// dead-letters it once its failed deliveries pass x-delivery-limit. The
// worker's only part is to hand a failure back the way that counts.
//
// Edit delayed_retry.go only; check_test.go is the checker (`qlab ex
// check 21`). It needs RabbitMQ 4.3 or newer (QLAB_RABBITMQ43_URL, else
// RABBITMQ_URL or the default URL when that broker is 4.3): under a
// private random prefix it declares a dead-letter queue and your queue,
// publishes one message, hands every delivery to your Fail and times
// each return, on two schedules, then deletes what it declared. Without
// a 4.3 broker the exercise is skipped, saying why.
package delayedretry

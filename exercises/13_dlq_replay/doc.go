// Package dlqreplay is exercise 13 (lesson Q16, operating the DLQ): an
// operator reads email-dlq to see what failed, without taking anything
// out of it, and then replays the emails to email-queue once the cause is
// fixed, each one starting over: retries 0, no x-death. Reading with
// basic.get and autoAck removes what you read (the management UI's
// "Ack mode: Automatic ack" does the same); requeueing each message at
// once hands you the same message again. A replay that acks before the
// copy is confirmed can lose the email.
//
// Edit dlq_ops.go only. names.go holds the types; check_test.go is the
// checker (`qlab ex check 13`). It needs a RabbitMQ broker (RABBITMQ_URL,
// else amqp://guest:guest@127.0.0.1:5672/): it fills a dead-letter queue
// of its own under a private random prefix (the messages carry a real
// x-death), calls Peek and Replay with a channel that records what you do,
// reads both queues and deletes them. Without a broker the exercise is
// skipped, saying why.
package dlqreplay

// Package delayqueues is exercise 12 (lesson Q14, one retry queue with a
// schedule of delays): the notification service of seed 002 puts every
// retry in one queue, email-retry-queue, with the retry's delay as the
// message's expiration (30 s, 1 min, 2 min, 5 min). RabbitMQ expires a
// message only at the head of its queue, so a 30 s retry behind a 5 min
// one waits the 5 minutes: head-of-line blocking. Here you choose the
// queues: one wait queue per delay, each with its own x-message-ttl, so
// the head of each queue is always the first due.
//
// Edit delay_queues.go only. names.go holds the names; check_test.go is
// the checker (`qlab ex check 12`). It needs a RabbitMQ broker
// (RABBITMQ_URL, else amqp://guest:guest@127.0.0.1:5672/): it declares the
// work queue and your retry queues under a private random prefix, sends
// retries of every delay, the longest first, reads the order they come
// back in and where each waited (x-death), and deletes what it declared.
// Without a broker the exercise is skipped, saying why.
package delayqueues

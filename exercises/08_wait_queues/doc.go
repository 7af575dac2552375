// Package waitqueues is exercise 08 (lesson Q10, the whole flow on
// RabbitMQ): the broker does the waiting. A worker rejects a failed
// message; the work queue's dead-letter arguments send it to a wait
// queue; the wait queue's x-message-ttl holds it, and its own dead-letter
// arguments send it back to the work queue when the time is up. No
// timer, no sleep, no republish in the worker: three queue arguments.
//
// Edit wait_queues.go only; check_test.go is the checker (`qlab ex check
// 8`). It needs a RabbitMQ broker (RABBITMQ_URL, else
// amqp://guest:guest@127.0.0.1:5672/): it declares two queues under a
// private random prefix, sends one message round them, and deletes them.
// Without a broker the exercise is skipped, saying why.
package waitqueues

// Package rabbit is QueueLab's RabbitMQ backend, built on amqp091-go.
//
// It holds the mechanics the RabbitMQ lessons compose:
//
//   - Discover finds a broker (RABBITMQ_URL, then the local default, then a
//     dockertest container where a Docker engine answers) and Redact keeps
//     passwords out of everything printed.
//   - Topology describes queues declaratively (durable work queues, wait
//     queues with x-message-ttl and a dead-letter route, delay queues whose
//     messages carry their own TTL, DLQs); Session
//     declares it under a per-run prefix (or the seed's exact names),
//     explains a 406 PRECONDITION_FAILED, and deletes what it declared.
//   - Publisher publishes persistent JSON with publisher confirms and waits
//     for each confirm within a context; PublishMessage sends a message
//     with extra properties (an Expiration, headers).
//   - Consumer is a manual-ack consumer with a prefetch, which survives a
//     dropped connection by reconnecting (the broker redelivers what was
//     unacknowledged) and reports redeliveries as lab events.
//   - ParseDeaths (strict) and ReadDeaths (lenient) read the x-death
//     header the broker adds on dead-lettering.
//   - ReadRetries reads a retry counter a worker that republishes failed
//     messages itself keeps: the lab's qlab-retries (no x- prefix: the
//     broker owns those) or seed 004's x-retries; it refuses anything but
//     an integer in [0, MaxRetryCount]. RetryReason and WithRetry read and
//     write the last error beside it; WithoutBrokerHeaders drops the
//     broker's x-death.
//   - Session.PublishUnroutable shows what a publish to an undeclared
//     queue gets: a confirm, and a basic.return only with mandatory.
//   - Session.Peek reads the head of a queue with basic.get and leaves it
//     there, to inspect a DLQ.
//   - Session.Screen, Sift and Empty apply the Consumer's foreign and
//     malformed check (NotATask) for lessons that read queues with
//     amqp091-go's own calls: what is no task of the run is parked in the
//     hold queue, never handled or counted.
//
// Like every backend it never prints: work is reported as lab.Events and
// connection trouble is logged through log/slog.
package rabbit

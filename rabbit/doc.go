// Package rabbit is QueueLab's RabbitMQ backend, built on amqp091-go.
//
// It holds the mechanics the RabbitMQ lessons compose:
//
//   - Discover finds a broker (RABBITMQ_URL, then the local default, then a
//     dockertest container where a Docker engine answers); Redact keeps
//     passwords out of everything printed, and a URL amqp091-go would read
//     as something else than what was written is refused.
//   - Session is one run's link to the broker: its connection, replaced
//     after a loss, and its health (Err). Its other concerns are parts of
//     their own: Topo declares the run's queues (refusing any that exist)
//     and deletes them at Close; Guest claims exact names for one run at a
//     time and moves what is no task of the run to its hold queue; Watch
//     tells when the run settled or stalled; Probes runs experiments.
//   - Session.Retry is the one retry loop (one backoff, Transient): connects,
//     reconnects, republishes, sibling sessions, probes, and the channels
//     and connections lessons open for themselves (Dial, DialCuttable,
//     Reader, OnConnection) wait for a broker that went away, for at most
//     Session.GiveUpAfter. PollUntil is the one bounded poll.
//   - Publisher publishes persistent JSON with publisher confirms through
//     one path (exchange, key, mandatory, confirm, return check), and
//     publishes again on a new channel after a loss.
//   - Consumer is a manual-ack consumer with a prefetch, which survives a
//     dropped connection by reconnecting (the broker redelivers what was
//     unacknowledged) and reports redeliveries as lab events.
//   - Flow is the seam's broker mechanism (flow.Backend): a delivery is a
//     task of the run only if its id is one the run put on its way to
//     that queue and has not settled.
//   - ParseDeaths (strict) and ReadDeaths (lenient) read the x-death
//     header the broker adds on dead-lettering; ReadRetries reads a retry
//     counter a worker that republishes keeps (qlab-retries, or seed 004's
//     x-retries) and refuses anything but an integer in [0, MaxRetryCount].
//   - Probes.PublishWatched publishes once and shows what the broker
//     answered: a confirm, and a basic.return only with mandatory;
//     PublishUnroutable uses it on a queue nobody declared.
//   - Guest.Peek reads the head of a queue and leaves it there; Screen,
//     Sift and Empty apply the consumer's foreign and malformed check
//     (NotATask) for lessons that read queues with amqp091-go's own calls.
//   - Inspect, Take, Replay and Purge are the DLQ operator's tools (qlab
//     dlq); Clean removes a killed run's queues (qlab broker clean).
//
// Like every backend it never prints: work is reported as lab.Events and
// connection trouble is logged through log/slog.
package rabbit

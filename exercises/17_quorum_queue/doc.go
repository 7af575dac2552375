// Package quorumqueue is exercise 17 (lesson Q21, quorum queues and a node
// failure): the declaration and the publish that let seed 003's
// birthday.messages.queue survive the node it lives on. A classic queue
// lives on one node: when that node dies, its messages are out of reach
// (or gone). A quorum queue keeps a copy on each of three nodes and
// elects a new leader when one dies; it must be durable. A publish is
// safe only once the broker confirms it: a quorum queue confirms when a
// majority of its nodes have written the message, and a message the
// broker refuses comes back as a nack, which the publisher must see.
//
// Edit quorum.go only. names.go holds the seed's queue name and the
// checker's batch; check_test.go is the checker (`qlab ex check 17`). It
// needs a RabbitMQ broker (RABBITMQ_URL, else
// amqp://guest:guest@127.0.0.1:5672/); one node is enough, since what
// makes a queue survive its node is what it is declared as, and the
// broker says that. Under a private random prefix it runs your Declare,
// re-declares the queue itself as a durable quorum queue (the broker
// refuses that, naming the difference, when yours is anything else),
// runs your Publish, reads the messages back (their delivery mode), hands
// your Publish a full queue that refuses messages, and deletes what it
// declared. Without a broker the exercise is skipped, saying why.
package quorumqueue

package notify

import "github.com/queuelab/qlab/flow"

// DiagramTopology is the topology the document's diagram and its "Retry
// Flow" imply: email-queue dead-letters to email-dlx with no routing key
// of its own (the box lists only "DLX: email-dlx"), and "on reject/NACK"
// the message reaches email-retry-queue "via DLX". The document never
// declares that arrow; it is a binding of email-dlx to email-retry-queue
// under the key a nacked message keeps: the one it was published with,
// brokerEmailQueue, email-queue's broker name (the default exchange routes
// by queue name). email-dlx still routes "email-dlq" to email-dlq.
//
// email-retry-queue has no x-message-ttl: the diagram says its TTL
// "varies", and a nack cannot give a message one.
func DiagramTopology(brokerEmailQueue string) flow.Topology {
	return flow.Topology{
		Queues: []flow.Queue{
			{Name: EmailQueue, Role: flow.Work, MaxLength: MaxLength, DeadLetterExchange: DLX},
			{Name: RetryQueue, Role: flow.Delay, DeadLetterTo: EmailQueue},
			{Name: DLQ, Role: flow.DLQ},
		},
		Exchanges: []flow.Exchange{{Name: DLX, Kind: flow.Direct}},
		Bindings: []flow.Binding{
			{Exchange: DLX, Queue: RetryQueue, Key: brokerEmailQueue},
			{Exchange: DLX, Queue: DLQ, Key: DLQKey},
		},
	}
}

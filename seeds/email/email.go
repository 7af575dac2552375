// Package email is seed 000's NestJS email service as the broker sees it:
// its three queue names and the single wait-queue loop they form. Q12
// puts a circuit breaker in front of its mail calls; Q13 shows where the
// loop's retry count goes wrong.
//
//	email_queue ─reject→ email_queue_wait (TTL) ─→ email_queue … worker ─publish→ email_queue_dlq
//
// The names are the seed's; a run adds its private prefix.
package email

import (
	"time"

	"github.com/queuelab/qlab/flow"
)

// The seed's queues: one work queue, one wait queue that sends failures
// back after its TTL, and the DLQ the worker publishes to at the end.
const (
	Queue     = "email_queue"
	WaitQueue = "email_queue_wait"
	DLQ       = "email_queue_dlq"
)

// Loop is the service's topology with the wait queue's TTL set to wait:
// email_queue dead-letters rejected messages into email_queue_wait, whose
// TTL dead-letters them back; the worker itself publishes a message that
// gave up to the DLQ.
func Loop(wait time.Duration) flow.Topology {
	return flow.Topology{Queues: []flow.Queue{
		{Name: Queue, Role: flow.Work, DeadLetterTo: WaitQueue},
		{Name: WaitQueue, Role: flow.Wait, TTL: wait, DeadLetterTo: Queue},
		{Name: DLQ, Role: flow.DLQ},
	}}
}

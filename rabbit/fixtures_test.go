package rabbit_test

import (
	"time"

	"github.com/queuelab/qlab/flow"
)

// The lessons own their topologies (lessons/q10, lessons/q12); these are
// the package tests' own copies of two of them, to test the mechanics on.

// The queue names of lesson Q10 (seed 001), as the seed spells them.
const (
	sequentialQueue            = "sequential.queue"
	sequentialRetryWait        = "sequential.retry.wait"
	sequentialRetryProcessing  = "sequential.retry.processing"
	sequentialSecondRetryWait  = "sequential.second.retry.wait"
	sequentialSecondProcessing = "sequential.second.retry.processing"
	sequentialDLQ              = "sequential.dlq"
)

// sequentialTopology is seed 001's Q10 flow: each processing queue
// dead-letters (on a reject) into a wait queue, whose TTL (1 s, then 2 s)
// dead-letters into the next processing queue; the last one dead-letters
// into the DLQ. The broker does every move; workers only ack or reject.
func sequentialTopology() flow.Topology {
	return flow.Topology{Queues: []flow.Queue{
		{Name: sequentialQueue, Role: flow.Work, DeadLetterTo: sequentialRetryWait},
		{Name: sequentialRetryWait, Role: flow.Wait, TTL: time.Second, DeadLetterTo: sequentialRetryProcessing},
		{Name: sequentialRetryProcessing, Role: flow.Work, DeadLetterTo: sequentialSecondRetryWait},
		{Name: sequentialSecondRetryWait, Role: flow.Wait, TTL: 2 * time.Second, DeadLetterTo: sequentialSecondProcessing},
		{Name: sequentialSecondProcessing, Role: flow.Work, DeadLetterTo: sequentialDLQ},
		{Name: sequentialDLQ, Role: flow.DLQ},
	}}
}

// The queue names of seed 000's email loop.
const (
	emailQueue = "email_queue"
	emailWait  = "email_queue_wait"
	emailDLQ   = "email_queue_dlq"
)

// emailLoopTopology is seed 000's single wait-queue loop: email_queue
// dead-letters rejected messages into email_queue_wait, whose TTL (the
// seed uses 5 s) dead-letters them back into email_queue; the x-death
// count tells the worker how often a message went round. email_queue_dlq
// is where the worker publishes a message after its last retry.
func emailLoopTopology(wait time.Duration) flow.Topology {
	return flow.Topology{Queues: []flow.Queue{
		{Name: emailQueue, Role: flow.Work, DeadLetterTo: emailWait},
		{Name: emailWait, Role: flow.Wait, TTL: wait, DeadLetterTo: emailQueue},
		{Name: emailDLQ, Role: flow.DLQ},
	}}
}

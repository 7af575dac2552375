package decision

import "github.com/queuelab/qlab/seeds/email"

// The NestJS email service's queues (seed 000), as seeds/email declares
// them: email_queue dead-letters a rejected mail into email_queue_wait,
// whose TTL (5 s) sends it back; the worker parks a mail in email_queue_dlq.
const (
	EmailQueue = email.Queue
	EmailWait  = email.WaitQueue
	EmailDLQ   = email.DLQ
)

// MaxDeliveries is how many deliveries a mail gets, calls and fast fails
// alike (the seed's maxRetries), before it is parked.
const MaxDeliveries = 15

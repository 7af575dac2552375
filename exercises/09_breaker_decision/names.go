package decision

import "github.com/queuelab/qlab/lessons/q12"

// The NestJS email service's queues (seed 000), as lesson Q12 declares
// them: email_queue dead-letters a rejected mail into email_queue_wait,
// whose TTL (5 s) sends it back; the worker parks a mail in email_queue_dlq.
const (
	EmailQueue = q12.EmailQueue
	EmailWait  = q12.EmailWait
	EmailDLQ   = q12.EmailDLQ
)

// MaxDeliveries is how many deliveries a mail gets, calls and fast fails
// alike (the seed's maxRetries), before it is parked.
const MaxDeliveries = 15

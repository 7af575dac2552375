// Package raffle is seed 004's RaffleAPI broker topology, shared by the
// lessons that run it (Q23, Q24) and by qlab serve, which publishes into
// it: the names as the seed spells them and one Topology.
package raffle

import (
	"time"

	"github.com/queuelab/qlab/flow"
)

// The seed's exchanges and queues.
const (
	Exchange      = "raffle_exchange"       // direct: users go in here
	RetryExchange = "raffle_retry_exchange" // direct: a failed user is published here
	DLX           = "raffle_dlx"            // direct: raffle_queue's dead-letter exchange
	Queue         = "raffle_queue"          // the users the consumer inserts
	RetryQueue    = "raffle_retry_10s"      // holds a retry RetryTTL, then back to Queue
	DLQ           = "raffle_dlq"            // the users that gave up
)

// RetryTTL is raffle_retry_10s's x-message-ttl (RETRY_TTL_MS 10000): the
// seed's whole "backoff", the same for every retry.
const RetryTTL = 10 * time.Second

// Topology is seed 004's topology: three direct exchanges; raffle_queue
// dead-letters through raffle_dlx (key raffle_dlq) into raffle_dlq;
// raffle_retry_10s holds a retry for RetryTTL, then dead-letters it
// through raffle_exchange back into raffle_queue. Each queue is bound to
// its exchange with its own name as the key.
func Topology() flow.Topology {
	return flow.Topology{
		Queues: []flow.Queue{
			{Name: Queue, Role: flow.Work, DeadLetterExchange: DLX, DeadLetterKey: DLQ},
			{Name: RetryQueue, Role: flow.Wait, TTL: RetryTTL,
				DeadLetterExchange: Exchange, DeadLetterKey: Queue},
			{Name: DLQ, Role: flow.DLQ},
		},
		Exchanges: []flow.Exchange{
			{Name: Exchange, Kind: flow.Direct},
			{Name: RetryExchange, Kind: flow.Direct},
			{Name: DLX, Kind: flow.Direct},
		},
		Bindings: []flow.Binding{
			{Exchange: Exchange, Queue: Queue, Key: Queue},
			{Exchange: RetryExchange, Queue: RetryQueue, Key: RetryQueue},
			{Exchange: DLX, Queue: DLQ, Key: DLQ},
		},
	}
}

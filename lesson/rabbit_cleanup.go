package lesson

import (
	"context"
	"time"

	"github.com/queuelab/qlab/rabbit"
)

// sessionSettle bounds a broker lesson's clean-up, whatever happened to its
// context.
const sessionSettle = 10 * time.Second

// CloseSession ends a RabbitMQ lesson's session whatever happened to ctx:
// it stops the consumers and deletes the run's queues within sessionSettle.
// A task still pending then (the run stopped early) was in a deleted
// queue, so it gets a lost event: no message vanishes without one. If the
// clean-up failed, the broker may still hold them and they stay pending.
func CloseSession(ctx context.Context, env *Env, s *rabbit.Session) {
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionSettle)
	defer cancel()
	if s.Close(cleanup) == nil {
		rabbit.ReportDiscarded(env.Stream, "Cleanup")
	}
}

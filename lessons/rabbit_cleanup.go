package lessons

import (
	"context"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

// closeSession ends a RabbitMQ lesson's session whatever happened to ctx:
// it stops the consumers and deletes the run's queues within q10Settle.
// A task still pending then (the run stopped early) was in a deleted
// queue, so it gets a lost event: no message vanishes without one. If the
// clean-up failed, the broker may still hold them and they stay pending.
func closeSession(ctx context.Context, env *Env, s *rabbit.Session) {
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), q10Settle)
	defer cancel()
	if s.Close(cleanup) != nil {
		return
	}
	for _, t := range env.Stream.Tasks() {
		if t.Fate == lab.FatePending {
			env.Stream.Emit(lab.Event{Kind: lab.Lost, Task: t.ID, Actor: "Cleanup",
				Note: "the run stopped early; deleting its queues discarded the message"})
		}
	}
}

package rabbitenv

import (
	"context"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
)

// CloseSession ends a RabbitMQ lesson's session whatever happened to ctx:
// it stops the consumers and deletes the queues the run created within
// lesson.SessionSettle. A task still pending then is reported lost, so no message
// vanishes without an event: with the session's failure as the reason
// when the run could not go on (a queue deleted from outside, a broker
// gone), otherwise because deleting the queues discarded it. If the
// clean-up failed after a normal stop, the broker may still hold them and
// they stay pending.
func CloseSession(ctx context.Context, env *lesson.Env, s *rabbit.Session) {
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), lesson.SessionSettle)
	defer cancel()
	if err := s.Err(); err != nil {
		rabbit.ReportLost(env.Stream, "Cleanup", "the run could not go on: "+err.Error())
	}
	if s.Close(cleanup) == nil && !s.Keep { // kept, a message is still where it was
		rabbit.ReportDiscarded(env.Stream, "Cleanup")
	}
}

package rabbit

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Dial opens a new connection to the session's broker, bounded by ctx and
// a few seconds, for a worker that must not share the session's
// connection (one whose mistakes may cost it its connection). The caller
// closes it; Close does not know it.
func (s *Session) Dial(ctx context.Context) (*amqp.Connection, error) {
	return dial(ctx, s.URL, nil)
}

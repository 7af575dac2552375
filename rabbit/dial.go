package rabbit

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Dial opens a new connection to the session's broker, named as the run's
// (ConnectionName), for a worker that must not share the session's
// connection (one whose mistakes may cost it its connection). Each try is
// bounded by ctx and a few seconds; the session reached the broker, so one
// that does not answer now is waited for (Retry), for at most
// GiveUpAfter. The caller closes it; Close does not know it.
func (s *Session) Dial(ctx context.Context) (*amqp.Connection, error) {
	var conn *amqp.Connection
	err := s.Retry(ctx, "dialling the broker", func() (err error) {
		conn, err = dialAs(ctx, s.URL, ConnectionName(s.Names), nil)
		return err
	})
	return conn, err
}

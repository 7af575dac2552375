package rabbit

import (
	"context"
	"fmt"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
)

// TestMayExist: a declare abandoned (its bound, the run cut short, the
// connection dropped) may still create its queue, so Close must delete
// it; one the broker refused created nothing of the run's.
func TestMayExist(t *testing.T) {
	abandoned := map[string]error{
		"succeeded":        nil,
		"run cut short":    fmt.Errorf("declaring: %w", context.Canceled),
		"its bound passed": fmt.Errorf("declaring: %w", context.DeadlineExceeded),
		"no answer":        ErrNoAnswer,
		"connection gone":  &amqp.Error{Code: amqp.ConnectionForced, Reason: "shutdown"},
	}
	for name, err := range abandoned {
		assert.True(t, mayExist(err), "%s: Close must delete the queue", name)
	}
	refused := map[string]error{
		"406": &amqp.Error{Code: amqp.PreconditionFailed, Reason: "PRECONDITION_FAILED - inequivalent arg"},
		"403": &amqp.Error{Code: amqp.AccessRefused, Reason: "ACCESS_REFUSED"},
	}
	for name, err := range refused {
		assert.False(t, mayExist(err), "%s: the broker created nothing", name)
	}
}

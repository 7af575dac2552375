package rabbit

import (
	"context"

	"github.com/queuelab/qlab/flow"
)

// DeclareRoutes lets the external tests declare a topology's exchanges
// alone, to stall the broker between a run's queues and its exchanges.
func DeclareRoutes(s *Session, ctx context.Context, t flow.Topology) ([]string, error) {
	return s.topo.declareRoutes(ctx, t)
}

// AwaitBack lets the external tests drive awaitBack with a depth of
// their own.
var AwaitBack = awaitBack

package q21

import (
	"context"
	"fmt"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// latencyPublishes is how many confirmed publishes part 2 times per queue.
const latencyPublishes = 300

// latencyOf is one queue type's confirmed publishes, timed.
type latencyOf struct {
	kind     string
	p50, p99 time.Duration
	rate     float64 // publishes per second, one at a time
}

// latency is part 2: the seed's "higher latency" trade-off, measured on
// this cluster: persistent publishes each waiting for its confirm, to a
// classic queue and to a quorum queue declared on the same node.
func (r *runner) latency(ctx context.Context) error {
	r.env.Phase(fmt.Sprintf("What the replicas cost: %d confirmed publishes to a classic and to a "+
		"quorum queue on the same cluster", latencyPublishes))
	c, ch, err := r.channel(ctx, 0, true)
	if err != nil {
		return err
	}
	defer c.Close()
	var out []latencyOf
	for _, q := range []struct{ name, kind string }{{latencyClassic, "classic"}, {latencyQuorum, "quorum"}} {
		if err := r.queue(ch, q.name, amqp.Table{"x-queue-type": q.kind}); err != nil {
			return err
		}
		l, err := timePublishes(ctx, ch, r.names.Of(q.name), latencyPublishes)
		if err != nil {
			return err
		}
		l.kind = q.kind
		out = append(out, l)
	}
	r.env.Report(latencyTable(out, c.node.Short))
	return nil
}

// timePublishes publishes n 256-byte persistent messages to queue, each
// confirmed before the next, and times each round trip.
func timePublishes(ctx context.Context, ch *amqp.Channel, queue string, n int) (latencyOf, error) {
	took := make([]time.Duration, 0, n)
	body := string(make([]byte, 256))
	begin := time.Now()
	for range n {
		t := time.Now()
		if err := confirmed(ctx, ch, "", queue, body); err != nil {
			return latencyOf{}, fmt.Errorf("timing publishes to %s: %w", queue, err)
		}
		took = append(took, time.Since(t))
	}
	all := time.Since(begin)
	slices.Sort(took)
	at := func(q float64) time.Duration { return took[int(q*float64(len(took)-1))] }
	return latencyOf{p50: at(0.5), p99: at(0.99), rate: float64(n) / all.Seconds()}, nil
}

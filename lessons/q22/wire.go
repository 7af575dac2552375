package q22

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/metrics"
	"github.com/queuelab/qlab/rabbit"
)

// wire reports what the stream cannot say, only the backend knows (a
// publish's round trip, a queue's consumers, the channels and the
// connection), to every metrics sink of the run (metrics.On): the
// lesson's own tap and a `qlab run 22 --metrics ADDR` server alike, so
// each of the seed's eleven names moves on /metrics.
type wire struct {
	set    metrics.Set
	run    metrics.Run
	broker *rabbit.Session // nil in memory

	mu                    sync.Mutex
	opens, closes, drops  int
	publishes             int
	publishTime           time.Duration
	consumers             map[string]int
	connectedAtLastChange bool
}

// newWire finds the run's metrics sinks and, on the broker, watches the
// consumers' channels (rabbit.Session.Channels): call it before the first
// Consume. The run is connected from here on.
func newWire(env *lesson.Env, b flow.Backend) *wire {
	w := &wire{set: metrics.On(env.Stream), consumers: map[string]int{},
		run: metrics.Run{Lesson: env.Stream.Lesson(), Backend: env.Stream.Backend()}}
	if s, err := rabbit.SessionOf(b); err == nil {
		w.broker = s
		s.Channels = w.channel
	}
	w.connectedAtLastChange = true
	w.set.SetConnected(w.run, true)
	return w
}

// channel counts a channel opened or gone. On the broker each consumer
// has a connection and a channel of its own, so a channel gone is a
// connection down until the consumer reconnects.
func (w *wire) channel(opened bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if opened {
		w.opens++
		w.set.ChannelOpened(w.run)
	} else {
		w.closes++
		w.drops++
		w.set.ChannelClosed(w.run)
	}
	w.connectedAtLastChange = opened
	w.set.SetConnected(w.run, opened)
}

// consume starts c on b and records the queue's consumers: as the broker
// counts them (a passive declare), or in memory the workers attached. In
// memory a consumer's channel is the Go channel its worker reads from.
func (w *wire) consume(ctx context.Context, b flow.Backend, c flow.Consumer) error {
	if err := b.Consume(ctx, c); err != nil {
		return err
	}
	n := 1 // the consumer attached
	if w.broker != nil {
		// A gauge is no reason to fail the run: a broker restarting just
		// now (the fault suite) leaves the count at the one attached.
		if counted, err := w.broker.Topo().Consumers(ctx, c.Queue); err == nil {
			n = counted
		}
	} else {
		w.channel(true)
	}
	w.mu.Lock()
	w.consumers[c.Queue] = n
	w.mu.Unlock()
	w.set.SetConsumers(w.run, c.Queue, n)
	return nil
}

// closed records, on the broker, that the run's session is closed: its
// consumers stopped and its queues deleted, so no gauge says a consumer
// is still there (in memory stopped did it).
func (w *wire) closed() {
	if w.broker == nil {
		return
	}
	w.zeroConsumers()
}

// stopped records, in memory, that the workers stopped when the run's
// work was done: their channels closed and no consumer is left. The
// broker's consumers stop when the run closes its session, after the
// report; the Channels hook counts those closes.
func (w *wire) stopped() {
	if w.broker != nil {
		return
	}
	for range w.zeroConsumers() {
		w.channel(false)
	}
}

// zeroConsumers sets every consumed queue's consumer gauge to 0 and
// returns the queues.
func (w *wire) zeroConsumers() []string {
	w.mu.Lock()
	queues := make([]string, 0, len(w.consumers))
	for q := range w.consumers {
		queues = append(queues, q)
	}
	w.mu.Unlock()
	for _, q := range queues {
		w.set.SetConsumers(w.run, q, 0)
	}
	return queues
}

// publish publishes task to queue on b and records how long the publish
// took: on the broker to its confirm, in memory the hand-off. It is real
// time, not lesson time: a confirm does not speed up with --speed.
func (w *wire) publish(ctx context.Context, b flow.Backend, actor, queue, task string) error {
	start := time.Now()
	if err := b.Publish(ctx, actor, queue, task); err != nil {
		return err
	}
	d := time.Since(start)
	w.set.ObservePublish(w.run, queue, d)
	w.mu.Lock()
	w.publishes++
	w.publishTime += d
	w.mu.Unlock()
	return nil
}

// rows are the table rows of the five names the stream alone does not
// move.
func (w *wire) rows() [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	publish := "to the broker's confirm (real time)"
	consumers := "held and main queue, as the broker counts them (a passive declare)"
	opens := "one per consumer, and one more at each reconnect after the cut"
	closes := "the cut closed them; the rest close as the run ends"
	conn := fmt.Sprintf("0 at each of the %d channel losses, 1 again at each reconnect", w.drops)
	if w.broker == nil {
		publish = "the in-memory hand-off (real time)"
		consumers = "held and main queue: the workers attached; 0 once they stopped"
		opens = "in memory a consumer's channel is the Go channel its worker reads"
		closes = "closed once the workers stopped"
		conn = "1 from the start, 0 once the workers stopped: no wire to lose in memory"
	}
	mean := w.publishTime / time.Duration(max(w.publishes, 1))
	return [][]string{
		{metrics.PublishDuration, fmt.Sprintf("n=%d, mean %.3f ms", w.publishes, float64(mean.Microseconds())/1000), publish},
		{metrics.ConsumersActive, fmt.Sprintf("%d and %d", w.consumers[Held], w.consumers[Queue]), consumers},
		{metrics.ChannelOpens, fmt.Sprint(w.opens), opens},
		{metrics.ChannelCloses, fmt.Sprint(w.closes), closes},
		{metrics.ConnectionStatus, fmt.Sprint(boolInt(w.connectedAtLastChange)), conn},
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// labFigures are the run's own counts, to set beside the broker's.
func (w *wire) labFigures(depth int, t metrics.Totals) labFigures {
	w.mu.Lock()
	defer w.mu.Unlock()
	return labFigures{depth: depth, heldConsumers: w.consumers[Held], published: w.publishes,
		attempts: t.Nacks + t.Acks, redeliveries: t.Redeliveries, acks: t.Acks}
}

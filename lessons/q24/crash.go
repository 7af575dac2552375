package q24

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/raffle"
)

// The users of part (c): the original and the copy publish_retry made.
const (
	crashed     = "c1"
	crashedCopy = crashed + copySuffix
)

// crash is part (c): the consumer publishes the retry, then dies before
// its ack. The broker hands the unacked original back, and the user
// travels twice.
func crash(ctx context.Context, env *lesson.Env) error {
	env.Phase("(c) publish the retry, crash before the ack: the user travels twice")
	// The DB refuses the first insert and is back by the redelivery.
	var died atomic.Bool
	down := func(string) time.Duration {
		if died.Load() {
			return 0
		}
		return time.Hour
	}
	r, err := open(ctx, env, "c", down)
	if err != nil {
		return err
	}
	defer r.close(ctx)
	c := r.seedConsumer(attemptsReading, toDLQ)
	seed := c.Handle
	c.Handle = func(ctx context.Context, d *flow.Delivery) flow.Decision {
		if d.Task != crashed || died.Load() {
			return seed(ctx, d)
		}
		retries := r.seedRetries(d)
		err := r.attempt(ctx, d, "Consumer", retries)
		if err == nil {
			return flow.Ack()
		}
		// publish_retry(data, attempt+1): a new message, x-retries+1.
		r.mu.Lock()
		r.offsets[crashedCopy] = retries + 1
		r.mu.Unlock()
		if err := r.b.PublishTo(ctx, "Consumer", raffle.RetryExchange, raffle.RetryQueue,
			crashedCopy); err != nil {
			return flow.Retry(raffle.RetryQueue, err)
		}
		// The process dies here, before its ACK: the channel closes and
		// the broker puts the unacked original back at once, unchanged.
		died.Store(true)
		return flow.Requeue()
	}
	if err := r.consume(ctx, []flow.Consumer{c}, r.viaAPI(crashed)); err != nil {
		return err
	}
	stored, err := r.db.CountUsers(ctx)
	if err != nil {
		return err
	}
	env.Report(crashTable(r, stored))
	return nil
}

func crashTable(r *run, stored int) render.Table {
	t := render.Table{
		Title:  "(c) A crash between publish_retry and the ack",
		Header: []string{"message", "x-retries seen", "deliveries", "where it ended"},
		Notes: []string{
			fmt.Sprintf("Users stored: %d. The redelivered original carries the lower count "+
				"and inserts the user; the copy comes back 10 s later, meets the taken id, "+
				"reads it as a DB error and retries into raffle_dlq: a stored user in the "+
				"DLQ. Without a unique id it would be stored twice.", stored),
			"The crash is the seam's requeue: what the broker does with a delivery whose " +
				"channel died unacked. Confirms do not help: the copy was confirmed.",
		},
	}
	rows := r.all()
	for _, task := range []string{crashed, crashedCopy} {
		n, seen := Deliveries(rows, task)
		t.Rows = append(t.Rows, []string{task, joinInts(seen), fmt.Sprint(n), r.end(task)})
	}
	return t
}

// joinInts prints ns as "0, 0, 1".
func joinInts(ns []int) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(n)
	}
	return s
}

package q21

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/store"
)

// The student's keys in `qlab tui 21` (Lesson.Actions): pull the plug on
// the leader's node at the moment they choose, and put it back.
const (
	KeyStop   = "k"
	KeyRevive = "v"
)

// Actions are the keys the TUI lists and hands to the run (Options.Act).
var Actions = []lesson.Action{
	{Key: KeyStop, Help: "stop leader"},
	{Key: KeyRevive, Help: "revive"},
}

// awaitStop waits for the moment to stop the leader's node. On its own
// (no Options.Act) that is once KillAfter messages are SENT. With the
// student's keys it is their k; if every message is SENT before a k
// comes, the run goes on with the node up and says so (stopped false).
func (r *runner) awaitStop(ctx context.Context, sh *shared, db store.Statuses, leader cluster.NodeSpec) (stopped bool, err error) {
	if r.act == nil {
		return true, sh.awaitSent(ctx, db, KillAfter, settleBound)
	}
	ctx, cancel := r.workBound(ctx)
	defer cancel()
	for {
		counts, err := db.Counts(ctx)
		if err != nil {
			return false, r.bounded(ctx, err)
		}
		if counts[store.Sent] >= Messages {
			return false, nil
		}
		select {
		case a, ok := <-r.act:
			switch {
			case !ok:
				r.act = nil // the front end went: wait for the messages alone
			case a.Key == KeyStop:
				a.Reply(fmt.Sprintf("stopping %s, the leader's node (rabbitmqctl stop_app)", leader.Short))
				return true, nil
			default:
				a.Reply("no node is stopped yet: k stops the leader's")
			}
		case <-ctx.Done():
			return false, r.bounded(ctx, fmt.Errorf("only %d of %d messages sent", counts[store.Sent], Messages))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// onKey answers a key pressed while the queue settles: v revives the
// node the run stopped (and notes when, in res); any other key is
// answered with why it does nothing now.
func (r *runner) onKey(ctx context.Context, a lesson.Act, res *failed) error {
	r.mu.Lock()
	down := r.killed
	r.mu.Unlock()
	switch {
	case a.Key == KeyRevive && down != "":
		a.Reply(fmt.Sprintf("reviving %s (rabbitmqctl start_app)", down))
		begin := time.Now()
		if err := r.revive(ctx); err != nil {
			return err
		}
		res.revived, res.revivedBy = time.Since(begin), "v, mid-run"
		r.env.Phase(fmt.Sprintf("%s revived (v): it rejoins as a follower; %s leads on",
			down, res.newLeader.Short))
	case a.Key == KeyRevive:
		a.Reply("no node is stopped: nothing to revive")
	case down != "":
		a.Reply(down + " is stopped already: v revives it")
	case res.stopped:
		a.Reply("the lesson stops one node per run: r runs it again")
	default:
		a.Reply("every message is sent: too late to stop a node in this run (r runs it again)")
	}
	return nil
}

// lateKeys answers the keys pressed after part 1, where they do nothing,
// until the returned stop is called.
func (r *runner) lateKeys() (stop func()) {
	act := r.act
	if act == nil {
		return func() {}
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case a, ok := <-act:
				if !ok {
					return
				}
				a.Reply("k and v work while part 1's messages are sent: r runs the lesson again")
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

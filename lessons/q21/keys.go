package q21

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queuelab/qlab/lesson"
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

// plug is the leader's node in part 1 as the student's keys move it: a
// goroutine answers every key at once (readKeys), whatever part 1 is
// doing, and hands the stop to part 1 through pull.
type plug struct {
	mu        sync.Mutex
	state     plugState
	leader    string        // the node k stops
	newLeader string        // who leads once it stopped
	pull      chan struct{} // closed at the student's k
	revives   sync.WaitGroup
}

type plugState int

const (
	plugIn       plugState = iota // waiting for k
	plugPulling                   // k taken: part 1 is stopping the node
	plugOut                       // stopped: v revives it
	plugReviving                  // v taken: the node is starting
	plugBack                      // revived by v
	plugLate                      // every message was sent before a k: nothing stopped
)

// readKeys answers the student's keys until the returned stop is called,
// which also waits for a revive under way. Without Options.Act it does
// nothing.
func (r *runner) readKeys(ctx context.Context, res *failed, p *plug) (stop func()) {
	stopKeys := lesson.ServeActs(r.act, func(a lesson.Act) { r.answer(ctx, a, res, p) })
	return func() {
		stopKeys()
		p.revives.Wait()
	}
}

// answer acts on one key, or says why it does nothing now.
func (r *runner) answer(ctx context.Context, a lesson.Act, res *failed, p *plug) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.state == plugIn && a.Key == KeyStop:
		p.state = plugPulling
		close(p.pull)
		a.Reply(fmt.Sprintf("stopping %s, the leader's node (rabbitmqctl stop_app)", p.leader))
	case p.state == plugIn:
		a.Reply("no node is stopped yet: k stops the leader's")
	case p.state == plugPulling:
		a.Reply(p.leader + " is stopping (rabbitmqctl stop_app): v works once it has stopped")
	case p.state == plugOut && a.Key == KeyRevive:
		p.state = plugReviving
		a.Reply(fmt.Sprintf("reviving %s (rabbitmqctl start_app)", p.leader))
		p.revives.Go(func() { r.reviveByStudent(ctx, res, p) })
	case p.state == plugOut:
		a.Reply(p.leader + " is stopped already: v revives it")
	case p.state == plugReviving:
		a.Reply(p.leader + " is starting again (rabbitmqctl start_app)")
	case p.state == plugBack && a.Key == KeyRevive:
		a.Reply("no node is stopped: nothing to revive")
	case p.state == plugBack:
		a.Reply("the lesson stops one node per run: r runs it again")
	default:
		a.Reply("every message is sent: too late to stop a node in this run (r runs it again)")
	}
}

// reviveByStudent revives the stopped node at the student's v and notes
// it in res; if it fails, the node stays stopped for part 1's end (or the
// clean-up) to revive.
func (r *runner) reviveByStudent(ctx context.Context, res *failed, p *plug) {
	begin := time.Now()
	err := r.revive(ctx)
	p.mu.Lock()
	if err != nil {
		p.state = plugOut
		p.mu.Unlock()
		r.env.Log().Warn("q21: reviving the stopped node at the student's v", "err", err)
		return
	}
	p.state = plugBack
	res.revived, res.revivedBy = time.Since(begin), "v, mid-run"
	r.env.Log().Info(fmt.Sprintf("q21: %s revived after %.1f s; it rejoins as a follower, %s leads on",
		p.leader, res.revived.Seconds(), p.newLeader))
	title := fmt.Sprintf("%s revived (v): it rejoins as a follower; %s leads on", p.leader, p.newLeader)
	p.mu.Unlock()
	r.env.Phase(title)
}

// awaitStop waits for the moment to stop the leader's node. On its own
// (no Options.Act) that is once KillAfter messages are SENT. With the
// student's keys it is their k; if every message is SENT before a k
// comes, the run goes on with the node up and says so (stopped false).
func (r *runner) awaitStop(ctx context.Context, sh *shared, db store.Statuses, p *plug) (stopped bool, err error) {
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
			return p.tooLate(), nil
		}
		select {
		case <-p.pull:
			return true, nil
		case <-ctx.Done():
			return false, r.bounded(ctx, fmt.Errorf("only %d of %d messages sent", counts[store.Sent], Messages))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tooLate closes the window for k, and reports whether a k came first.
func (p *plug) tooLate() (pulled bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == plugIn {
		p.state = plugLate
		return false
	}
	return true
}

// out notes that the node has stopped and who leads now.
func (p *plug) out(newLeader string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state, p.newLeader = plugOut, newLeader
}

// lateKeys answers the keys pressed after part 1, where they do nothing,
// until the returned stop is called.
func (r *runner) lateKeys() (stop func()) {
	return lesson.ServeActs(r.act, func(a lesson.Act) {
		a.Reply("k and v work while part 1's messages are sent: r runs the lesson again")
	})
}

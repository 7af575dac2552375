package rabbitenv

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
)

// What a run's clean-ups left behind. Every session a run opens is kept
// for the run (sessions): a part of a lesson whose clean-up could not
// delete its queues in time left them under the names the next part
// declares, so the next part tries again first (tidyEarlier); and the
// run's end tries once more and names whatever stays (leftovers).

// TidyBound bounds one more try at what the run's clean-ups left: a
// broker that answered nothing for the clean-up's own bound gets this
// much longer.
const TidyBound = 5 * time.Second

// tidyEarlierBound bounds the try before a part that declares the names
// an earlier part left: that part cannot start until they are gone, so it
// waits longer than the run's last try does. On two busy cores beside
// make test, a 4.3 node did not delete Q25's queues of the part before
// within TidyBound.
const tidyEarlierBound = 30 * time.Second

// sessions are the sessions of one run, in the order it opened them.
type sessions struct {
	mu   sync.Mutex
	list []*rabbit.Session
}

func (ss *sessions) add(s *rabbit.Session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.list = append(ss.list, s)
}

func (ss *sessions) all() []*rabbit.Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]*rabbit.Session(nil), ss.list...)
}

// sessionsKey is where a run's sessions are held (Env.Hold).
type sessionsKey struct{}

// sessionsMu makes creating a run's sessions list once safe between
// parts that open sessions at the same time.
var sessionsMu sync.Mutex

// sessionsOf is env's list of sessions, created on first use.
func sessionsOf(env *lesson.Env) *sessions {
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	if ss, ok := env.Held(sessionsKey{}).(*sessions); ok {
		return ss
	}
	ss := &sessions{}
	env.Hold(sessionsKey{}, ss)
	return ss
}

// tidyEarlier deletes what the run's earlier sessions left behind, within
// ctx and tidyEarlierBound. What it cannot delete ends the part with an error
// that says it is the run's own and how to remove it.
func tidyEarlier(ctx context.Context, env *lesson.Env) error {
	for _, s := range sessionsOf(env).all() {
		if queues, exchanges := s.Topo().Left(); len(queues)+len(exchanges) == 0 {
			continue
		}
		tidy, cancel := context.WithTimeout(ctx, tidyEarlierBound)
		err := s.Topo().TidyLeft(tidy)
		cancel()
		if err != nil {
			return fmt.Errorf("this run's earlier part could not delete what it declared, and the next part "+
				"declares the same names: %w", err)
		}
	}
	return nil
}

// leftovers is the broker's Mechanism.Leftovers: one more try, within
// TidyBound, at what the run's sessions left, and a *rabbit.LeftError for
// whatever stays.
func leftovers(ctx context.Context, env *lesson.Env) error {
	ctx, cancel := context.WithTimeout(ctx, TidyBound)
	defer cancel()
	var all *rabbit.LeftError
	for _, s := range sessionsOf(env).all() {
		err := s.Topo().TidyLeft(ctx)
		left, ok := err.(*rabbit.LeftError)
		if !ok {
			continue
		}
		if all == nil {
			all = &rabbit.LeftError{Names: left.Names}
		}
		all.Queues = append(all.Queues, left.Queues...)
		all.Exchanges = append(all.Exchanges, left.Exchanges...)
		all.Err = left.Err
	}
	if all == nil {
		return nil
	}
	return all
}

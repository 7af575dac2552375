package q14

import (
	"context"
	"sync"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/seeds/notify"
)

// arrivals publishes the load (var load) of one run, stage by stage, and
// remembers how often each of its jobs fails. Its zero value is ready.
type arrivals struct {
	mu      sync.Mutex
	fails   map[string]int // task → how many of its attempts fail
	arrived map[int]bool   // which stages (job.arrivesAt) were published
	first   error          // the first publish that failed
}

// arrive publishes, with prefix on their ids, the jobs of the load that
// arrive at stage: once, even if A's delivery is handed out again after an
// interrupt. A publish that fails is also kept for err.
func (a *arrivals) arrive(ctx context.Context, b flow.Backend, prefix string, stage int) error {
	a.mu.Lock()
	if a.arrived[stage] {
		a.mu.Unlock()
		return nil
	}
	if a.arrived == nil {
		a.arrived, a.fails = map[int]bool{}, map[string]int{}
	}
	a.arrived[stage] = true
	var due []job
	for _, j := range load {
		if j.arrivesAt == stage {
			due = append(due, j)
			a.fails[prefix+j.id] = j.failures
		}
	}
	a.mu.Unlock()
	for _, j := range due {
		if err := b.Publish(ctx, "API", notify.EmailQueue, prefix+j.id); err != nil {
			a.mu.Lock()
			if a.first == nil {
				a.first = err
			}
			a.mu.Unlock()
			return err
		}
	}
	return nil
}

// failures is how many of task's attempts fail.
func (a *arrivals) failures(task string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fails[task]
}

// err is the first publish that failed, if one did.
func (a *arrivals) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.first
}

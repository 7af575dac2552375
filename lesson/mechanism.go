package lesson

import (
	"context"
	"fmt"
	"sync"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// Mechanism is how a run opens the flow backend of one kind. The
// in-memory one is built in; the broker's registers itself from package
// lesson/rabbitenv, which every broker lesson imports, so package lesson
// (and the channel lessons Q01–Q09) never link the AMQP client.
type Mechanism struct {
	// Open starts the run's backend. The run closes it with env.Close.
	Open func(ctx context.Context, env *Env) (flow.Backend, error)
	// Features is what its backends can do, known without opening one.
	Features flow.Features
	// Declared, when set, is the table a run shows the first time it
	// declares a topology on b (what the broker really made of it).
	Declared func(b flow.Backend, topo flow.Topology) render.Table
	// Leftovers, when set, runs once the lesson's RunFunc returned: it
	// tries once more, within a bound of its own, to remove what the
	// run's clean-ups could not, and returns an error naming whatever is
	// still left and the command that removes it (nil when nothing is).
	// Unset, Run reports the clean-ups' own errors.
	Leftovers func(ctx context.Context, env *Env) error
}

var (
	mechanismsMu sync.RWMutex
	mechanisms   = map[lab.Backend]Mechanism{
		lab.InMem: {
			Open: func(ctx context.Context, env *Env) (flow.Backend, error) {
				return inmem.NewFlow(ctx, env.Stream, max(flowRoom, 2*len(env.Plan.Tasks))), nil
			},
			Features: (*inmem.Flow)(nil).Features(),
		},
	}
)

// Register makes m the mechanism of backend kind (a package's init).
func Register(kind lab.Backend, m Mechanism) {
	mechanismsMu.Lock()
	defer mechanismsMu.Unlock()
	mechanisms[kind] = m
}

// mechanism is kind's registered mechanism, or an error naming the
// package that registers it.
func mechanism(kind lab.Backend) (Mechanism, error) {
	mechanismsMu.RLock()
	defer mechanismsMu.RUnlock()
	m, ok := mechanisms[kind]
	if !ok {
		return Mechanism{}, fmt.Errorf("lesson: no %s mechanism is linked into this program (import github.com/queuelab/qlab/lesson/rabbitenv)", kind)
	}
	return m, nil
}

// FeaturesOf is what the flow mechanism of backend kind can do (see
// flow.Features), known without opening one; nothing for a kind not
// linked in.
func FeaturesOf(kind lab.Backend) flow.Features {
	m, _ := mechanism(kind)
	return m.Features
}

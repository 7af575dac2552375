package lesson

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// BrokerNames picks a RabbitMQ lesson's queue names: the names the run was
// given (Options.Names), the seed's exact names with --names exact (under a
// person's prefix with --prefix), or a fresh per-run prefix so runs never
// collide. The caller checked the prefix (rabbit.CheckPrefix); one that
// fails here is ignored.
func BrokerNames(env *Env) rabbit.Names {
	switch {
	case env.Names != nil:
		return *env.Names
	case !env.SeedNames:
		return rabbit.RunNames()
	}
	if names, err := rabbit.PersonNames(env.Prefix); err == nil {
		return names
	}
	return rabbit.SeedNames()
}

// Session opens the run's RabbitMQ session under BrokerNames(e), with the
// run's clock and its bound on waiting for a lost broker.
// Under Keep, a run in parts (Q15's routes, Q16's overflow modes) declares
// the same names again in each: the previous part's kept queues go first,
// so the run leaves its last part's.
func (e *Env) Session(ctx context.Context) (*rabbit.Session, error) {
	if e.kept != nil {
		if err := e.kept.DeleteKept(ctx); err != nil {
			return nil, err
		}
	}
	s, err := rabbit.Open(ctx, e.Broker, BrokerNames(e), e.Stream.Clock(), nil)
	if err != nil {
		return nil, err
	}
	s.GiveUpAfter, s.Keep = e.GiveUpAfter, e.Keep
	if e.Keep {
		e.kept = s
	}
	return s, nil
}

// TopologyTable shows what a RabbitMQ lesson declared: each queue's broker
// name, role, the TTL the broker really waits and where it dead-letters.
func TopologyTable(topo rabbit.Topology, s *rabbit.Session) render.Table {
	ended := "The run deleted them when it ended (only queues it created: it refuses names that already exist)."
	if s.Keep {
		ended = "The run leaves them on the broker (--keep): qlab broker clean --prefix " + strings.TrimSuffix(s.Names.Prefix, ".") + " removes them."
	}
	t := render.Table{
		Title:  "Queues declared on the broker",
		Header: []string{"queue", "role", "x-message-ttl", "dead-letters to"},
		Notes: []string{
			ended + " Watch a run live: rabbitmqctl list_queues name messages arguments",
			"(or the management UI on port 15672) while qlab run N --backend rabbit --names exact --speed 1 runs.",
		},
	}
	for _, q := range topo.Queues {
		ttl, dl := "-", "-"
		if q.TTL > 0 {
			ttl = fmt.Sprintf("%d ms (lesson %s)", rabbit.Arguments(q, s.Names, s.Clock)["x-message-ttl"], q.TTL)
		}
		if q.DeadLetterTo != "" {
			dl = s.Names.Of(q.DeadLetterTo)
		}
		t.Rows = append(t.Rows, []string{s.Names.Of(q.Name), string(q.Role), ttl, dl})
	}
	return t
}

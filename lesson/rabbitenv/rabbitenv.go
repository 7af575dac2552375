// Package rabbitenv is the broker's side of package lesson: it registers
// the RabbitMQ flow mechanism (lesson.Register) and gives broker lessons
// their session, names and clean-up. Only lessons that run on a broker
// import it, so the channel lessons (Q01–Q09) link neither amqp091-go nor
// the Docker client (TestLayering says so).
package rabbitenv

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

func init() {
	lesson.Register(lab.Rabbit, lesson.Mechanism{
		Open:     open,
		Features: (*rabbit.Flow)(nil).Features(),
		Declared: func(b flow.Backend, topo flow.Topology) render.Table {
			s, err := rabbit.SessionOf(b)
			if err != nil {
				return render.Table{Title: "Queues declared on the broker", Notes: []string{err.Error()}}
			}
			return TopologyTable(topo, s)
		},
	})
}

// open starts a flow on a RabbitMQ session under the run's names.
func open(ctx context.Context, env *lesson.Env) (flow.Backend, error) {
	s, err := Session(ctx, env)
	if err != nil {
		return nil, err
	}
	b, err := rabbit.NewFlow(ctx, s, env.Stream)
	if err != nil {
		CloseSession(ctx, env, s)
		return nil, err
	}
	return b, nil
}

// Names picks a RabbitMQ lesson's queue names: the names the run was
// given (Options.Names), the seed's exact names with --names exact (under a
// person's prefix with --prefix), or a fresh per-run prefix so runs never
// collide. The caller checked the prefix (rabbit.CheckPrefix); one that
// fails here is ignored.
func Names(env *lesson.Env) rabbit.Names {
	switch {
	case env.Names != nil:
		return rabbit.Names(*env.Names)
	case !env.SeedNames:
		return rabbit.RunNames()
	}
	if names, err := rabbit.PersonNames(env.Prefix); err == nil {
		return names
	}
	return rabbit.SeedNames()
}

// Of is n as the run options carry it (lesson.Options.Names).
func Of(n rabbit.Names) *lesson.Names {
	ln := lesson.Names(n)
	return &ln
}

// Session opens the run's RabbitMQ session under Names(env), with the
// run's clock, logger and bound on waiting for a lost broker.
func Session(ctx context.Context, env *lesson.Env) (*rabbit.Session, error) {
	s, err := rabbit.Open(ctx, env.Broker, Names(env), env.Stream.Clock(), env.Log())
	if err != nil {
		return nil, err
	}
	s.GiveUpAfter = env.GiveUpAfter
	return s, nil
}

// TopologyTable shows what a RabbitMQ lesson declared: each queue's broker
// name, role, the TTL the broker really waits and where it dead-letters.
func TopologyTable(topo rabbit.Topology, s *rabbit.Session) render.Table {
	t := render.Table{
		Title:  "Queues declared on the broker",
		Header: []string{"queue", "role", "x-message-ttl", "dead-letters to"},
		Notes: []string{
			"The run deleted them when it ended (only queues it created: it refuses names that already exist). Watch a run live: rabbitmqctl list_queues name messages arguments",
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

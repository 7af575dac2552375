// Package rabbitenv is the broker's side of package lesson: it registers
// the RabbitMQ flow mechanism (lesson.Register) and gives broker lessons
// their session, names and clean-up. Only lessons that run on a broker
// import it, so the channel lessons (Q01–Q09) link neither amqp091-go nor
// the Docker client (TestLayering says so).
package rabbitenv

import (
	"context"
	"fmt"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

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
		Leftovers: leftovers,
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

// Names are a RabbitMQ lesson's queue names: the names the run was given
// (Options.Names: the run API picks them from --names and --prefix), or a
// fresh per-run prefix, so runs never collide.
func Names(env *lesson.Env) rabbit.Names {
	if env.Names != nil {
		return rabbit.Names(*env.Names)
	}
	return rabbit.RunNames()
}

// Of is n as the run options carry it (lesson.Options.Names).
func Of(n rabbit.Names) *lesson.Names {
	ln := lesson.Names(n)
	return &ln
}

// keptKey is where Session holds the run's previous session (Env.Hold)
// under Keep.
type keptKey struct{}

// Session opens the run's RabbitMQ session under Names(env), with the
// run's clock, logger and bound on waiting for a lost broker; the run's
// broker answered before it began (discovery), so one that does not
// answer now is waited for that long (rabbit.OpenAgain). Under Keep,
// a run in parts (Q15's routes, Q16's overflow modes) declares the same
// names again in each: the previous part's kept queues go first, so the
// run leaves its last part's.
//
// A part whose clean-up left queues behind (a broker too slow to answer
// its deletes in time) left them under the same names: the next part
// deletes them first, as the run's own, rather than refuse them as a
// stranger's (see tidyEarlier).
func Session(ctx context.Context, env *lesson.Env) (*rabbit.Session, error) {
	if kept, ok := env.Held(keptKey{}).(*rabbit.Session); ok {
		if err := kept.Topo().DeleteKept(ctx); err != nil {
			return nil, err
		}
	}
	if err := tidyEarlier(ctx, env); err != nil {
		return nil, err
	}
	s, err := rabbit.OpenAgain(ctx, env.Broker, Names(env), env.Stream.Clock(), env.Log(), env.GiveUpAfter)
	if err != nil {
		return nil, err
	}
	sessionsOf(env).add(s)
	s.GiveUpAfter, s.Keep, s.Quorum = env.GiveUpAfter, env.Keep, env.Quorum
	if seen := env.Deliveries; seen != nil {
		s.Observe = func(queue string, d amqp.Delivery) {
			seen(lesson.Carried{Queue: queue, Task: d.MessageId, Redelivered: d.Redelivered, Headers: d.Headers})
		}
	}
	if env.Keep {
		env.Hold(keptKey{}, s)
	}
	return s, nil
}

// TopologyTable shows what a RabbitMQ lesson declared: each queue's broker
// name, role, the TTL the broker really waits and where it dead-letters.
func TopologyTable(topo flow.Topology, s *rabbit.Session) render.Table {
	ended := "The run deleted them when it ended (only queues it created: it refuses names that already exist)."
	if s.Keep {
		ended = "The run leaves them on the broker (--keep): qlab broker clean --prefix " + strings.TrimSuffix(s.Names.Prefix, ".") + " removes them."
	}
	// The run's prefix is named once, in the title: on every row it made
	// each queue name wrap at 80 columns and hid the names a student
	// knows from the lesson.
	title := "Queues declared on the broker"
	if s.Names.Prefix != "" {
		title += " (each name starts with " + s.Names.Prefix + ")"
	}
	t := render.Table{
		Title:  title,
		Header: []string{"queue", "role", "x-message-ttl", "dead-letters to"},
		Notes: []string{
			ended + " Watch a run live: rabbitmqctl list_queues name messages arguments " +
				"(or the management UI on port 15672) while qlab run N --backend rabbit --names exact --speed 1 runs.",
		},
	}
	for _, q := range topo.Queues {
		ttl, dl := "-", ""
		if q.TTL > 0 {
			ttl = fmt.Sprintf("%d ms (lesson %s)", rabbit.Arguments(q, s.Names, s.Clock)["x-message-ttl"], q.TTL)
		}
		dl = deadLettersTo(topo, q)
		t.Rows = append(t.Rows, []string{q.Name, string(q.Role), ttl, dl})
	}
	return t
}

// deadLettersTo says where a queue's rejected and expired messages go: the
// queue itself, or the exchange and the queue its binding reaches ("-" for
// none), so a queue that dead-letters through an exchange is not shown as
// dropping its messages.
func deadLettersTo(topo flow.Topology, q flow.Queue) string {
	switch {
	case q.DeadLetterExchange != "":
		target := topo.DeadLetterTarget(q.Name)
		if target == "" {
			target = "no queue bound"
		}
		return q.DeadLetterExchange + " → " + target
	case q.DeadLetterTo != "":
		return q.DeadLetterTo
	}
	return "-"
}

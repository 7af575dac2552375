package q16

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// onFirst is a sink that runs fire once, inside Emit (holding up the
// goroutine that emitted), at the first event match accepts.
type onFirst struct {
	labtest.Recorder
	match func(lab.Event) bool
	fire  func()
	once  sync.Once
}

func (o *onFirst) Emit(e lab.Event) {
	o.Recorder.Emit(e)
	if o.match(e) {
		o.once.Do(o.fire)
	}
}

// TestQ16WorkerSurvivesTheBroker disturbs Q16's own worker on a private
// node, at the moment it has republished a retry and not yet acked the
// original: every connection of the run closed, then (a second run) the
// node restarted after a while away. The worker reads email-queue with
// basic.get on a channel of its own, which once never redialled: the run
// ended with exit 1 on "504 channel/connection is not open", and after a
// restart it left email-queue, email-dlq, email-retry-queue and email-dlx
// behind. Now it reopens its channel, the broker hands the unacked
// original out again, every task is accounted for, and nothing of the run
// is left. Each run is the lesson's DLQ operations only (operateOnly):
// the fault fires at the worker's first retry, which only they have.
func TestQ16WorkerSurvivesTheBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private RabbitMQ node")
	}
	t.Parallel() // beside TestQ16RabbitMQ, on a node of its own
	n := rabbittest.StartNode(t)
	faults := map[string]func(ctx context.Context, names rabbit.Names) error{
		"close": func(ctx context.Context, names rabbit.Names) error {
			_, err := n.CloseConnections(ctx, rabbit.ConnectionName(names), "test: the run's connections closed")
			return err
		},
		// A restart, away longer than the worker's loop once allowed (its
		// longest retry delay, 3 s at the test speed, and 10 s), shorter
		// than the run's give-up. A quick restart is the same path with
		// less time away: this one covers it.
		"restart after 15s away": func(ctx context.Context, _ rabbit.Names) error {
			if _, err := n.Ctl(ctx, "stop_app"); err != nil {
				return err
			}
			time.Sleep(15 * time.Second)
			_, err := n.Ctl(ctx, "start_app")
			return err
		},
	}
	for _, name := range []string{"close", "restart after 15s away"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			names := rabbit.RunNames()
			var fireErr error
			sink := &onFirst{
				match: func(e lab.Event) bool { return e.Kind == lab.Scheduled && e.Actor == "Email-Worker" },
				fire:  func() { fireErr = faults[name](ctx, names) },
			}
			_, err := lesson.Run(ctx, operateOnly(), lesson.Options{Backend: lab.Rabbit, Broker: n.URL, Speed: Lesson.TestSpeed,
				Names: rabbitenv.Of(names), GiveUpAfter: giveUp}, sink)
			require.NoError(t, fireErr)
			require.NoError(t, err, "the worker redials")
			events := sink.Events()
			labtest.AssertAccounted(t, events)
			assert.NotEmpty(t, labtest.OfKind(events, lab.Redelivered), "the unacked original came back")

			declared, err := queuesAndExchanges(ctx, n)
			require.NoError(t, err)
			require.Contains(t, declared, "amq.direct", "the listing reads the node's exchanges")
			for _, name := range declared {
				assert.False(t, strings.HasPrefix(name, names.Prefix), "the run left %s behind", name)
			}
		})
	}
}

// giveUp is the fault runs' GiveUpAfter: the restart's stop_app and
// start_app take seconds each on a loaded machine, on top of its 15 s
// away, and the run must wait all of it out.
const giveUp = time.Minute

// operateOnly is Q16 with its DLQ operations only (q16Operate): the
// overflow runs before them never retry, so a fault at the first retry
// never meets them, and TestQ16RabbitMQ runs them on the test broker.
func operateOnly() lesson.Lesson {
	l := Lesson
	l.Rabbit = func(ctx context.Context, env *lesson.Env) error {
		inspect := q16InspectTable()
		_, err := q16Operate(ctx, env, &inspect)
		return err
	}
	return l
}

// queuesAndExchanges lists the names of every queue and exchange on n in
// one rabbitmqctl eval: each rabbitmqctl starts an Erlang VM, seconds of
// CPU on a loaded machine, and a list_queues and a list_exchanges took
// two.
func queuesAndExchanges(ctx context.Context, n *rabbittest.Node) ([]string, error) {
	out, err := n.Ctl(ctx, "eval", `[N || {resource, _, _, N} <- `+
		`[amqqueue:get_name(Q) || Q <- rabbit_amqqueue:list()] ++ `+
		`[element(2, X) || X <- rabbit_exchange:list()]].`)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range erlangBinary.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	return names, nil
}

// erlangBinary is a binary as rabbitmqctl eval prints it: <<"name">>.
var erlangBinary = regexp.MustCompile(`<<"([^"]*)">>`)

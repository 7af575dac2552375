package q16

import (
	"context"
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
// node restarted. The worker reads email-queue with basic.get on a channel
// of its own, which once never redialled: the run ended with exit 1 on
// "504 channel/connection is not open", and after a restart it left
// email-queue, email-dlq, email-retry-queue and email-dlx behind. Now it
// reopens its channel, the broker hands the unacked original out again,
// every task is accounted for, and nothing of the run is left.
func TestQ16WorkerSurvivesTheBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private RabbitMQ node")
	}
	n := rabbittest.StartNode(t)
	faults := map[string]func(ctx context.Context, names rabbit.Names) error{
		"close": func(ctx context.Context, names rabbit.Names) error {
			_, err := n.CloseConnections(ctx, rabbit.ConnectionName(names), "test: the run's connections closed")
			return err
		},
		"restart": func(ctx context.Context, _ rabbit.Names) error {
			if _, err := n.Ctl(ctx, "stop_app"); err != nil {
				return err
			}
			_, err := n.Ctl(ctx, "start_app")
			return err
		},
		// Away longer than the worker's loop once allowed (its longest
		// retry delay and 10 s), shorter than the session's give-up.
		"away 20s": func(ctx context.Context, _ rabbit.Names) error {
			if _, err := n.Ctl(ctx, "stop_app"); err != nil {
				return err
			}
			time.Sleep(20 * time.Second)
			_, err := n.Ctl(ctx, "start_app")
			return err
		},
	}
	for _, name := range []string{"close", "restart", "away 20s"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			names := rabbit.RunNames()
			var fireErr error
			sink := &onFirst{
				match: func(e lab.Event) bool { return e.Kind == lab.Scheduled && e.Actor == "Email-Worker" },
				fire:  func() { fireErr = faults[name](ctx, names) },
			}
			_, err := lesson.Run(ctx, Lesson, lesson.Options{Backend: lab.Rabbit, Broker: n.URL, Speed: Lesson.TestSpeed, Names: rabbitenv.Of(names)}, sink)
			require.NoError(t, fireErr)
			require.NoError(t, err, "the worker redials")
			events := sink.Events()
			labtest.AssertAccounted(t, events)
			assert.NotEmpty(t, labtest.OfKind(events, lab.Redelivered), "the unacked original came back")

			queues, err := n.Queues(ctx)
			require.NoError(t, err)
			for _, q := range queues {
				assert.False(t, strings.HasPrefix(q, names.Prefix), "the run left %s behind", q)
			}
			exchanges, err := n.Ctl(ctx, "list_exchanges", "name")
			require.NoError(t, err)
			assert.NotContains(t, exchanges, names.Prefix, "the run left an exchange behind")
		})
	}
}

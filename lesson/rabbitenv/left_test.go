package rabbitenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// twoParts is a lesson in two parts on the same names, as Q12, Q19 and Q23
// run: each part declares one queue and publishes one task into it. The
// first part's clean-up runs out of time before it deletes anything (a
// broker a room of runs keeps busy; here its bound has already passed),
// so its queue, and its message, stay on the broker under the names the
// second part declares.
func twoParts(closeFirst func(b flow.Backend)) lesson.Lesson {
	topo := flow.Topology{Queues: []flow.Queue{{Name: "part.queue", Role: flow.Work}}}
	part := func(ctx context.Context, env *lesson.Env, task string, close func(flow.Backend)) error {
		b, err := env.Open(ctx)
		if err != nil {
			return err
		}
		defer close(b)
		if err := env.Declare(ctx, b, topo); err != nil {
			return err
		}
		return b.Publish(ctx, "Producer", "part.queue", task)
	}
	return lesson.Lesson{ID: "Q99", Title: "two parts", Rabbit: func(ctx context.Context, env *lesson.Env) error {
		if err := part(ctx, env, "A", closeFirst); err != nil {
			return err
		}
		return part(ctx, env, "B", func(b flow.Backend) { env.Close(ctx, b) })
	}}
}

// closeTooLate closes b with a clean-up bound that has already passed.
func closeTooLate(b flow.Backend) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = b.Close(ctx)
}

// runTwoParts runs l on the test broker under fresh names, and removes
// whatever it left however the test ends.
func runTwoParts(t *testing.T, l lesson.Lesson) (rabbit.Names, error) {
	url := rabbittest.NeedBroker(t)
	names := rabbit.RunNames()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = rabbit.Clean(ctx, url, names, []flow.Topology{{Queues: []flow.Queue{{Name: "part.queue"}}}}, false)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := lesson.Run(ctx, l, lesson.Options{Backend: lab.Rabbit, Broker: url, Names: rabbitenv.Of(names),
		Speed: 10, Logger: rabbittest.Logger(t)})
	return names, err
}

// remaining lists which of names' part.queue is still on the broker.
func remaining(t *testing.T, names rabbit.Names) rabbit.CleanResult {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := rabbit.Clean(ctx, rabbittest.NeedBroker(t), names,
		[]flow.Topology{{Queues: []flow.Queue{{Name: "part.queue"}}}}, true)
	require.NoError(t, err)
	return res
}

// TestNextPartDeletesWhatTheLastLeft: the second part recognises the
// first part's queue as the run's own, deletes it and declares its own;
// it used to refuse it as a stranger's ("already exist on the broker:
// this run did not create them") and fail the run.
func TestNextPartDeletesWhatTheLastLeft(t *testing.T) {
	names, err := runTwoParts(t, twoParts(closeTooLate))
	require.NoError(t, err)
	assert.Empty(t, remaining(t, names).Deleted, "the run left its queue behind")
}

// TestRunEndTriesAgain: a clean-up that failed, in the last part, is not
// dropped: the run's end tries again (where that fails too, the run's
// error names what is left: TestLeftErrorNamesItsQueues). Here the broker
// answers the second try, so nothing is left.
func TestRunEndTriesAgain(t *testing.T) {
	l := lesson.Lesson{ID: "Q99", Title: "one part"}
	l.Rabbit = func(ctx context.Context, env *lesson.Env) error {
		b, err := env.Open(ctx)
		if err != nil {
			return err
		}
		defer closeTooLate(b)
		if err := env.Declare(ctx, b, flow.Topology{Queues: []flow.Queue{{Name: "part.queue", Role: flow.Work}}}); err != nil {
			return err
		}
		return b.Publish(ctx, "Producer", "part.queue", "A")
	}
	names, err := runTwoParts(t, l)
	require.NoError(t, err, "the run's end deleted what its clean-up left: nothing is left to report")
	assert.Empty(t, remaining(t, names).Deleted, "the run left its queue behind")
}

// TestLeftErrorNamesItsQueues: what a run could not delete is named, with
// its messages, and the command that removes it.
func TestLeftErrorNamesItsQueues(t *testing.T) {
	names := rabbit.Names{Prefix: "qlab-0a1b2c.", Run: "qlab-0a1b2c"}
	err := &rabbit.LeftError{Names: names,
		Queues:    []rabbit.CleanedQueue{{Name: "qlab-0a1b2c.main", Messages: 10}, {Name: "qlab-0a1b2c.wait", Messages: -1}},
		Exchanges: []string{"qlab-0a1b2c.events"}}
	assert.Equal(t, "the run left on the broker queue qlab-0a1b2c.main (10 messages), queue qlab-0a1b2c.wait "+
		"(messages unknown), exchange qlab-0a1b2c.events; remove them with: qlab broker clean --prefix qlab-0a1b2c",
		err.Error())
	exact := &rabbit.LeftError{Queues: []rabbit.CleanedQueue{{Name: "main", Messages: 0}}}
	assert.Contains(t, exact.Error(), "remove them with: rabbitmqctl delete_queue main")
}

// stopped is a one-part lesson whose broker stops under it: it declares
// a queue and a wait queue, publishes A into the first, then stops the
// node's application and publishes B, which waits for the broker for the
// run's GiveUpAfter and then fails the run. afterStop runs once the
// broker is down (a test starts it again there, or not); closeRun ends
// the run's session.
func stopped(n *rabbittest.Node, afterStop func(), closeRun func(*lesson.Env, flow.Backend)) lesson.Lesson {
	topo := flow.Topology{Queues: []flow.Queue{
		{Name: "work", Role: flow.Work, DeadLetterTo: "work.wait"},
		{Name: "work.wait", Role: flow.Wait, TTL: time.Minute, DeadLetterTo: "work"},
	}}
	return lesson.Lesson{ID: "Q99", Title: "a broker stop", Rabbit: func(ctx context.Context, env *lesson.Env) error {
		b, err := env.Open(ctx)
		if err != nil {
			return err
		}
		defer closeRun(env, b)
		if err := env.Declare(ctx, b, topo); err != nil {
			return err
		}
		if err := b.Publish(ctx, "Producer", "work", "A"); err != nil {
			return err
		}
		if _, err := n.Ctl(ctx, "stop_app"); err != nil {
			return err
		}
		afterStop()
		return b.Publish(ctx, "Producer", "work", "B")
	}}
}

// runStopped runs l on node n with a short GiveUpAfter.
func runStopped(t *testing.T, n *rabbittest.Node, l lesson.Lesson) (rabbit.Names, error) {
	names := rabbit.RunNames()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := lesson.Run(ctx, l, lesson.Options{Backend: lab.Rabbit, Broker: n.URL, Names: rabbitenv.Of(names),
		Speed: 10, GiveUpAfter: 2 * time.Second, Logger: rabbittest.Logger(t)})
	return names, err
}

// TestBrokerStopCleanUp: a run whose broker stopped gives it up, and its
// clean-up still deletes its queues when the broker is back within the
// clean-up's bound; it used to try once, find the run failed, and leave
// them (Q22 left its queue and 10 messages after a 30 s stop). When the
// broker stays away, the run's error names each queue it left and the
// command that removes them.
func TestBrokerStopCleanUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private RabbitMQ node")
	}
	n := rabbittest.StartNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := func() {
		if _, err := n.Ctl(ctx, "start_app"); err != nil {
			t.Errorf("starting the node again: %v", err)
		}
		if err := n.AwaitUp(ctx); err != nil {
			t.Error(err)
		}
	}

	t.Run("back in time", func(t *testing.T) {
		restarted := make(chan struct{})
		names, err := runStopped(t, n, stopped(n, func() {
			go func() { // after the run gave the broker up: its clean-up is what waits
				defer close(restarted)
				time.Sleep(2 * time.Second) // the run gives up after 2 s; the start takes seconds more
				start()
			}()
		}, func(env *lesson.Env, b flow.Backend) { env.Close(ctx, b) }))
		<-restarted
		require.Error(t, err, "the run gave the broker up")
		assert.NotContains(t, err.Error(), "left on the broker")
		queues, qerr := n.Queues(ctx)
		require.NoError(t, qerr)
		for _, q := range queues {
			assert.NotContains(t, q, names.Prefix, "the run left %s behind", q)
		}
	})

	// The run's end (rabbitenv.TidyBound) is what finds the broker gone and
	// names what is left, so the session's own clean-up need not wait out
	// its 20 s bound (lesson.SessionSettle) first: its bound has passed.
	t.Run("away for good", func(t *testing.T) {
		names, err := runStopped(t, n, stopped(n, func() {}, func(_ *lesson.Env, b flow.Backend) { closeTooLate(b) }))
		start()
		require.Error(t, err)
		var left *rabbit.LeftError
		require.ErrorAs(t, err, &left, "the run's error says what it left: %v", err)
		assert.Contains(t, err.Error(), "queue "+names.Of("work")+" (messages unknown)")
		assert.Contains(t, err.Error(), "queue "+names.Of("work.wait")+" (messages unknown)")
		assert.Contains(t, err.Error(), "remove them with: qlab broker clean --prefix "+names.Run)
		res, cerr := rabbit.Clean(ctx, n.URL, names, []flow.Topology{{Queues: []flow.Queue{{Name: "work"}, {Name: "work.wait"}}}}, false)
		require.NoError(t, cerr)
		assert.Len(t, res.Deleted, 2, "both queues were still there for clean")
	})
}

package rabbit_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// outsider is someone else on the broker: a plain amqp091-go channel that
// publishes without the run's id and deletes queues behind the run's back.
func outsider(t *testing.T) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	require.NoError(t, ch.Confirm(false))
	return ch
}

// publishConfirmed publishes m to queue from an outsider's channel and
// waits for the broker's confirm, so the message is in the queue before
// the test's next step (another connection's publish is not ordered with
// it otherwise).
func publishConfirmed(ctx context.Context, t *testing.T, ch *amqp.Channel, queue string, m amqp.Publishing) {
	t.Helper()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, m)
	require.NoError(t, err)
	ok, err := dc.WaitContext(ctx)
	require.NoError(t, err)
	require.True(t, ok, "the broker took %s's message", queue)
}

// depthOf reads a queue's ready messages without touching them.
func depthOf(t *testing.T, ch *amqp.Channel, name string) int {
	t.Helper()
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	require.NoError(t, err, "queue %s must still exist", name)
	return q.Messages
}

// recorded is a stream with a recorder safe to read while consumers emit.
func recorded() (*lab.Stream, func() []lab.Event) {
	var mu sync.Mutex
	var rec lab.Recorder
	stream := lab.NewStream("test", lab.Rabbit, lab.NewClock(1), lab.SinkFunc(func(e lab.Event) {
		mu.Lock()
		defer mu.Unlock()
		rec.Emit(e)
	}))
	return stream, func() []lab.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]lab.Event(nil), rec.Events...)
	}
}

// TestDeclareLeavesSomeoneElsesQueueAlone: a queue the run would declare
// already exists and holds a message. The run refuses to start, says which
// queue and how to remove it, and neither consumes nor deletes it.
func TestDeclareLeavesSomeoneElsesQueueAlone(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx := testCtx(t)
	names := rabbit.RunNames()
	other := outsider(t)
	theirs := names.Of(sequentialDLQ)
	_, err := other.QueueDeclare(theirs, true, false, false, false, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = other.QueueDelete(theirs, false, false, false) })
	publishConfirmed(ctx, t, other, theirs, amqp.Publishing{Body: []byte("keep me")})

	s, err := rabbit.Open(ctx, url, names, lab.NewClock(20), rabbittest.Logger(t))
	require.NoError(t, err)
	err = s.Topo().Declare(ctx, sequentialTopology())
	var ee *rabbit.ExistsError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, []string{theirs}, ee.Queues)
	assert.Contains(t, err.Error(), "queue "+theirs+" already exists")
	assert.Contains(t, err.Error(), "rabbitmqctl delete_queue "+theirs)
	require.NoError(t, s.Close(ctx))

	assert.Equal(t, 1, depthOf(t, other, theirs), "their message is still there")
	for _, q := range sequentialTopology().Queues {
		if q.Name != sequentialDLQ { // each check on a channel of its own: a 404 closes it
			_, err := outsider(t).QueueDeclarePassive(names.Of(q.Name), true, false, false, false, nil)
			assert.Error(t, err, "the refused run declared nothing: %s", q.Name)
		}
	}
}

// TestForeignMessageIsHeldNotHandled: a message the run did not publish
// arrives in the run's queue. The handler never sees it, the session
// counts it, and it waits in the run's hold queue with the reason, which
// outlives the run.
func TestForeignMessageIsHeldNotHandled(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
	other := outsider(t)
	publishConfirmed(ctx, t, other, s.Names.Of("work"), amqp.Publishing{MessageId: "", AppId: "someone-else", Body: []byte("not json")})
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, "work", "A", nil))

	handled := make(chan string, 2)
	_, err = s.Consume(ctx, rabbit.ConsumerOptions{Queue: "work", Actor: "W"}, func(_ context.Context, d *rabbit.Delivery) {
		assert.NoError(t, d.Ack()) // not require: this is the consumer's goroutine, not the test's
		handled <- d.Task
	})
	require.NoError(t, err)
	assert.Equal(t, "A", <-handled)
	hold := s.Names.Run + ".foreign"
	require.Eventually(t, func() bool { return s.Guest().Foreign() == 1 }, 10*time.Second, 10*time.Millisecond)
	select {
	case task := <-handled:
		t.Fatalf("the handler got a foreign message as task %q", task)
	default:
	}
	held, ok, err := other.Get(hold, true)
	require.NoError(t, err)
	require.True(t, ok, "the foreign message waits in %s", hold)
	assert.Equal(t, "not json", string(held.Body))
	assert.Equal(t, "someone-else", held.AppId)
	assert.Contains(t, held.Headers[rabbit.ForeignReasonHeader], "not published by run "+s.Names.Run)
	// Put it back, close the run: the hold queue stays while it holds it.
	publishConfirmed(ctx, t, other, hold, amqp.Publishing{Body: held.Body})
	t.Cleanup(func() { _, _ = outsider(t).QueueDelete(hold, false, false, false) })
	require.NoError(t, s.Close(ctx))
	assert.Equal(t, 1, depthOf(t, other, hold))
}

// TestForeignMessageInAWaitQueueIsHeldAtClose: a message someone else
// put in one of the run's wait queues is still waiting out its TTL when
// the run ends. Close moves it to the hold queue with a reason instead of
// deleting it with the queue (it once deleted it silently); the run's own
// message there goes with the queue.
func TestForeignMessageInAWaitQueueIsHeldAtClose(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, emailLoopTopology(time.Hour)))
	other := outsider(t)
	publishConfirmed(ctx, t, other, s.Names.Of(emailWait), amqp.Publishing{MessageId: "theirs", AppId: "someone-else", Body: []byte("{}")})
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, emailWait, "A", nil))

	hold := s.Names.Run + ".foreign"
	t.Cleanup(func() { _, _ = outsider(t).QueueDelete(hold, false, false, false) })
	require.NoError(t, s.Close(ctx))
	held, ok, err := other.Get(hold, true)
	require.NoError(t, err)
	require.True(t, ok, "the foreign message waits in %s", hold)
	assert.Equal(t, "theirs", held.MessageId)
	assert.Contains(t, held.Headers[rabbit.ForeignReasonHeader], "found in "+s.Names.Of(emailWait))
	assert.Equal(t, 0, depthOf(t, other, hold), "only the foreign message was held")
}

// TestDeletedConsumedQueueEndsTheRun: someone deletes the queue a consumer
// reads. The run ends with one error naming it, within the bound, instead
// of reconnecting for ever.
func TestDeletedConsumedQueueEndsTheRun(t *testing.T) {
	s := rabbittest.Session(t, 20)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, emailLoopTopology(time.Hour)))
	stream, _ := recorded()
	_, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: emailQueue, Actor: "W", Stream: stream}, func(_ context.Context, d *rabbit.Delivery) {
		_ = d.Reject() // off to the wait queue, for an hour
	})
	require.NoError(t, err)
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: emailQueue})
	require.NoError(t, pub.Publish(ctx, emailQueue, "A", nil))

	_, err = outsider(t).QueueDelete(s.Names.Of(emailQueue), false, false, false)
	require.NoError(t, err)
	start := time.Now()
	err = s.Watch().WaitSettled(ctx, stream, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "queue "+s.Names.Of(emailQueue)+" was deleted")
	assert.Less(t, time.Since(start), 5*time.Second, "ends within the bound, not after a minute of retries")
	assert.Equal(t, err, s.Err())
}

// TestDeletedWaitQueueEndsTheRun: the queue nobody consumes (a wait queue
// holding a message) is deleted. WaitSettled notices and says which.
func TestDeletedWaitQueueEndsTheRun(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, emailLoopTopology(time.Hour)))
	stream, _ := recorded()
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: emailWait})
	require.NoError(t, pub.Publish(ctx, emailWait, "A", nil))
	_, err = outsider(t).QueueDelete(s.Names.Of(emailWait), false, false, false)
	require.NoError(t, err)

	err = s.Watch().WaitSettled(ctx, stream, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "queue "+s.Names.Of(emailWait)+" was deleted")
	rabbit.ReportLost(stream, "Cleanup", err.Error())
	tasks := stream.Finish()
	require.Len(t, tasks, 1)
	assert.Equal(t, lab.FateLost, tasks[0].Fate)
}

// TestStalledRunGivesUp: a task whose message never moves (here: it was
// never published) ends the wait after the session's patience (here the
// real-time floor, 10 s, as a loaded machine needs).
func TestStalledRunGivesUp(t *testing.T) {
	t.Parallel() // waits out the watchdog's real-time floor
	s := rabbittest.Session(t, 1)
	s.Patience = time.Second
	stream, _ := recorded()
	stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: "nowhere"})
	start := time.Now()
	err := s.Watch().WaitSettled(testCtx(t), stream, nil)
	require.ErrorIs(t, err, rabbit.ErrStalled)
	assert.Contains(t, err.Error(), "still pending: A")
	assert.Less(t, time.Since(start), 20*time.Second, "the patience's real-time floor (10 s), and no more than double")
}

// TestPausedRunIsNotStalled: while the run's clock is paused (the TUI's
// space bar) nothing is expected to move, so the pause does not count
// toward the patience: a run held past the 10 s real-time floor still
// waits, and settles once its task does. Counted in real time, a 16 s
// pause of Q10 in the TUI ended the run with "no task made progress".
func TestPausedRunIsNotStalled(t *testing.T) {
	t.Parallel() // holds past the watchdog's real-time floor
	s := rabbittest.Session(t, 1)
	s.Patience = time.Second
	pause := &lab.Pause{}
	s.Clock = s.Clock.WithPause(pause)
	stream, _ := recorded()
	stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: "nowhere"})
	pause.Hold()
	waited := make(chan error, 1)
	go func() { waited <- s.Watch().WaitSettled(testCtx(t), stream, nil) }()
	select {
	case err := <-waited:
		t.Fatalf("the wait ended while the run was paused: %v", err)
	case <-time.After(12 * time.Second):
	}
	pause.Release()
	stream.Emit(lab.Event{Kind: lab.Succeeded, Task: "A", Queue: "nowhere"})
	require.NoError(t, <-waited)
}

// TestBrokerURLIsTheOnlyBrokerTried: with RABBITMQ_URL set, its failure is
// the answer, one line, classified and redacted, even though the default
// broker answers.
func TestBrokerURLIsTheOnlyBrokerTried(t *testing.T) {
	good, err := url.Parse(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	wrongPassword := *good
	wrongPassword.User = url.UserPassword(good.User.Username(), "Not-The-Pw-42")
	noVhost := *good
	noVhost.Path = "/" + rabbit.RunNames().Run
	cases := map[string]struct{ url, reason, secret string }{
		"refused":        {"amqp://guest:Hidden-Pw-7@127.0.0.1:1/", "connection refused", "Hidden-Pw-7"},
		"authentication": {wrongPassword.String(), "authentication failed", "Not-The-Pw-42"},
		"vhost":          {noVhost.String(), "vhost not allowed", ""},
		"unparsable":     {"00:Secret-Pw-9@0", "not an AMQP URL", "Secret-Pw-9"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv(rabbit.EnvURL, c.url)
			_, err := rabbit.Discover(testCtx(t), rabbit.DiscoverOptions{})
			require.ErrorIs(t, err, rabbit.ErrNoBroker, "no fall-back to the default broker")
			msg := err.Error()
			assert.Contains(t, msg, "RABBITMQ_URL="+rabbit.Redact(c.url)+": "+c.reason)
			assert.Contains(t, msg, "no other broker is tried")
			assert.NotContains(t, msg, "\n")
			var nb *rabbit.NoBrokerError
			require.ErrorAs(t, err, &nb)
			if c.secret != "" {
				assert.NotContains(t, msg+nb.Details(), c.secret)
			}
		})
	}
}

// TestRedactHidesPasswordsInLibraryMessages: whatever a library echoes of
// the URL, the password does not survive.
func TestRedactHidesPasswordsInLibraryMessages(t *testing.T) {
	const raw = "amqp://u:s%40cret@%0"
	_, err := rabbit.Probe(testCtx(t), raw, "test")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s%40cret")
	assert.NotContains(t, err.Error(), "s@cret")
	assert.True(t, errors.As(err, new(*rabbit.DialError)))
	assert.False(t, strings.Contains(rabbit.Broker{URL: raw}.String(), "cret"))
}

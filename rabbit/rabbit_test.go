package rabbit_test

import (
	"context"
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

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRedactHidesPasswords(t *testing.T) {
	cases := map[string]string{
		"amqp://guest:guest@127.0.0.1:5672/": "amqp://guest:xxxxx@127.0.0.1:5672/",
		"amqps://u:s3cr%40t@host/vhost":      "amqps://u:xxxxx@host/vhost",
		"amqp://host:5672/":                  "amqp://host:5672/",
		"amqp://u:p@ss word@host:5672/\x7f":  "amqp://u:xxxxx@host:5672/\x7f",
		"00:secret@0":                        "00:xxxxx@0",
		"amqp://u:secret@%0":                 "amqp://u:xxxxx@%0",
		"amqp://user@host/":                  "amqp://user@host/",
		"S3cretPW":                           "<hidden: 8 characters, not a URL>", // the password alone, pasted by mistake
		"localhost:5672":                     "<hidden: 14 characters, not a URL>",
		"":                                   "",
	}
	for in, want := range cases {
		assert.Equal(t, want, rabbit.Redact(in), in)
	}
}

func TestProbeErrorNeverShowsThePassword(t *testing.T) {
	_, err := rabbit.Probe(testCtx(t), "amqp://user:topsecret@127.0.0.1:1/", "test")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "topsecret")
	assert.Contains(t, err.Error(), "127.0.0.1:1")
}

func TestDiscoverReportsVersionAndHow(t *testing.T) {
	rabbittest.NeedBroker(t)
	b, err := rabbit.Discover(testCtx(t), rabbit.DiscoverOptions{})
	require.NoError(t, err)
	assert.Regexp(t, `^\d+\.\d+`, b.Version)
	assert.Contains(t, []string{rabbit.EnvURL, "default URL"}, b.How)
	assert.NotContains(t, b.String(), ":guest@", "the description is redacted")
}

func TestDiscoverTellsHowToGetABroker(t *testing.T) {
	t.Setenv(rabbit.EnvURL, "")
	_, err := rabbit.Discover(testCtx(t), rabbit.DiscoverOptions{DefaultURL: "amqp://guest:guest2@127.0.0.1:1/"})
	require.ErrorIs(t, err, rabbit.ErrNoBroker)
	assert.Equal(t, "no RabbitMQ broker found (amqp://guest:xxxxx@127.0.0.1:1/: connection refused); "+
		"start one with `rabbitmq-server -detached`, or `qlab broker up` where Docker runs", err.Error())
	var nb *rabbit.NoBrokerError
	require.ErrorAs(t, err, &nb)
	assert.Contains(t, nb.Details(), "dial tcp 127.0.0.1:1", "the library's message is kept for -v")
	assert.NotContains(t, nb.Details(), "guest2")
	assert.Equal(t, 1, strings.Count(nb.Details(), "127.0.0.1:1/"), "the URL is named once: %s", nb.Details())
}

func TestTopologyDeclaresTTLAndDeadLetterRoutes(t *testing.T) {
	const speed = 20
	s := rabbittest.Session(t, speed)
	ctx := testCtx(t)
	topo := sequentialTopology()
	require.NoError(t, s.Topo().Declare(ctx, topo))

	wait, _ := topo.Queue(sequentialRetryWait)
	args := rabbit.Arguments(wait, s.Names, s.Clock)
	assert.Equal(t, int64(50), args["x-message-ttl"], "1 s of lesson time at speed 20")
	assert.Equal(t, "", args["x-dead-letter-exchange"])
	assert.Equal(t, s.Names.Of(sequentialRetryProcessing), args["x-dead-letter-routing-key"])

	// The broker accepts a redeclaration only with equivalent arguments:
	// that reads back what was really declared.
	for _, q := range topo.Queues {
		assert.NoError(t, s.Topo().Redeclare(ctx, q, nil), q.Name)
	}
	other := rabbit.Arguments(wait, s.Names, s.Clock)
	other["x-message-ttl"] = int64(51)
	err := s.Topo().Redeclare(ctx, wait, other)
	var pe *rabbit.PreconditionError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, s.Names.Of(sequentialRetryWait), pe.Queue)
	assert.Contains(t, pe.Error(), "rabbitmqctl delete_queue "+s.Names.Of(sequentialRetryWait))
	assert.Contains(t, pe.Error(), "x-message-ttl")
	assert.NotContains(t, pe.Error(), "\n", "one line")
}

func TestDeclareExplainsPreconditionFailed(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx := testCtx(t)
	names := rabbit.RunNames()
	first, err := rabbit.Open(ctx, url, names, lab.NewClock(1), rabbittest.Logger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = first.Close(context.Background()) })
	require.NoError(t, first.Topo().Declare(ctx, emailLoopTopology(5*time.Second)))

	// The same names at another speed mean another TTL: a 406 for the wait
	// queue, and the run refuses all three queues it did not create.
	second, err := rabbit.Open(ctx, url, names, lab.NewClock(10), rabbittest.Logger(t))
	require.NoError(t, err)
	defer second.Close(ctx)
	err = second.Topo().Declare(ctx, emailLoopTopology(5*time.Second))
	var pe *rabbit.PreconditionError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, names.Of(emailWait), pe.Queue)
	assert.Equal(t, "rabbitmqctl delete_queue "+names.Of(emailWait), pe.ResetCommand(), "only the conflicting queue")
	var ee *rabbit.ExistsError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, []string{names.Of(emailQueue), names.Of(emailWait), names.Of(emailDLQ)}, ee.Queues)
	assert.NotContains(t, err.Error(), "\n", "one line")

	// The session is still usable after the broker closed that channel.
	n, err := second.Topo().Depth(ctx, emailQueue)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
}

func TestPublishConsumeWithConfirmsAndManualAck(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	defer pub.Close()
	require.NoError(t, pub.Publish(ctx, "work", "A", nil))

	got := make(chan *rabbit.Delivery, 1)
	_, err = s.Consume(ctx, rabbit.ConsumerOptions{Queue: "work", Actor: "t", Prefetch: 4}, func(_ context.Context, d *rabbit.Delivery) {
		assert.NoError(t, d.Ack())
		got <- d
	})
	require.NoError(t, err)
	var d *rabbit.Delivery
	select {
	case d = <-got:
	case <-ctx.Done():
		t.Fatal("no delivery")
	}
	assert.Equal(t, "A", d.Task)
	assert.Equal(t, "application/json", d.ContentType)
	assert.Equal(t, uint8(2), d.DeliveryMode, "persistent")
	assert.JSONEq(t, `{"task":"A"}`, string(d.Body))
	assert.Equal(t, 1, d.Attempt())
	assert.False(t, d.Redelivered)
}

func TestPublishMessageKeepsHeadersAndExpiration(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{
		{Name: "work", Role: flow.Work, DeadLetterTo: "dlq"}, {Name: "dlq", Role: flow.DLQ},
	}}))
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	msg := rabbit.Publishing("B", nil)
	msg.Headers = amqp.Table{"x-retries": int32(3)}
	require.NoError(t, pub.PublishMessage(ctx, "dlq", msg))
	expiring := rabbit.Publishing("E", nil)
	expiring.Expiration = "1" // ms: it expires in "work" and dead-letters to "dlq"
	require.NoError(t, pub.PublishMessage(ctx, "work", expiring))

	got := make(chan *rabbit.Delivery, 2)
	_, err = s.Consume(ctx, rabbit.ConsumerOptions{Queue: "dlq", Actor: "t"}, func(_ context.Context, d *rabbit.Delivery) {
		assert.NoError(t, d.Ack())
		got <- d
	})
	require.NoError(t, err)
	byTask := map[string]*rabbit.Delivery{}
	for range 2 {
		select {
		case d := <-got:
			byTask[d.Task] = d
		case <-ctx.Done():
			t.Fatalf("got only %v", byTask)
		}
	}
	assert.Equal(t, int32(3), byTask["B"].Headers["x-retries"])
	assert.Equal(t, int64(1), byTask["E"].Died("work"), "the per-message TTL expired it in work")
	assert.Equal(t, int64(1), byTask["E"].Deaths.Reason("expired"))
}

// TestXDeathCountsTheWaitLoop runs seed 000's loop for real: every reject
// sends the message through the wait queue's TTL and back, and x-death
// counts each queue it died in.
func TestXDeathCountsTheWaitLoop(t *testing.T) {
	const speed = 20
	s := rabbittest.Session(t, speed)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, emailLoopTopology(time.Second)))
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, emailQueue, "mail-1", nil))

	type seen struct {
		deaths rabbit.Deaths
		died   int64 // trips through the wait queue, by seed name
		at     time.Time
	}
	var deliveries []seen
	finished := make(chan struct{})
	_, err = s.Consume(ctx, rabbit.ConsumerOptions{Queue: emailQueue, Actor: "Email-Worker"}, func(_ context.Context, d *rabbit.Delivery) {
		deliveries = append(deliveries, seen{d.Deaths, d.Died(emailWait), time.Now()})
		if len(deliveries) < 4 {
			assert.NoError(t, d.Reject())
			return
		}
		assert.NoError(t, d.Ack())
		close(finished)
	})
	require.NoError(t, err)
	select {
	case <-finished:
	case <-ctx.Done():
		t.Fatalf("the loop stopped after %d deliveries", len(deliveries))
	}
	last := deliveries[3].deaths
	assert.Equal(t, int64(3), last.Count(s.Names.Of(emailQueue)), "rejected three times in email_queue")
	assert.Equal(t, int64(3), last.Count(s.Names.Of(emailWait)), "expired three times in the wait queue")
	assert.Equal(t, int64(3), last.Reason("expired"))
	assert.Equal(t, 4, (&rabbit.Delivery{Deaths: last}).Attempt())
	ttl := s.Clock.Real(time.Second)
	for i := 1; i < len(deliveries); i++ {
		assert.Equal(t, int64(i), deliveries[i].deaths.Count(s.Names.Of(emailWait)))
		assert.Equal(t, int64(i), deliveries[i].died)
		assert.GreaterOrEqual(t, deliveries[i].at.Sub(deliveries[i-1].at), ttl, "the TTL held the message back")
	}
}

// TestDroppedConnectionRedelivers cuts the consumer's socket while it
// holds an unacknowledged message: the consumer reconnects, the broker
// redelivers, a redelivered event says so, and the message is not lost.
func TestDroppedConnectionRedelivers(t *testing.T) {
	s := rabbittest.Session(t, 1)
	ctx := testCtx(t)
	require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
	pub, err := s.Publisher(ctx)
	require.NoError(t, err)

	var rec lab.Recorder
	var mu sync.Mutex
	stream := lab.NewStream("test", lab.Rabbit, lab.NewClock(1), lab.SinkFunc(func(e lab.Event) {
		mu.Lock()
		defer mu.Unlock()
		rec.Emit(e)
	}))
	stream.Emit(lab.Event{Kind: lab.Enqueued, Task: "A", Queue: "work"})
	require.NoError(t, pub.Publish(ctx, "work", "A", nil))

	holding := make(chan struct{})
	var ackErrs []error
	c, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: "work", Actor: "W", Stream: stream}, func(ctx context.Context, d *rabbit.Delivery) {
		stream.Emit(lab.Event{Kind: lab.Started, Task: d.Task, Queue: "work", Actor: "W"})
		if !d.Redelivered {
			close(holding)
			time.Sleep(50 * time.Millisecond) // still working when the socket goes
			ackErrs = append(ackErrs, d.Ack())
			return
		}
		ackErrs = append(ackErrs, d.Ack())
		stream.Emit(lab.Event{Kind: lab.Succeeded, Task: d.Task, Queue: "work", Actor: "W"})
	})
	require.NoError(t, err)
	<-holding
	c.Interrupt()
	require.NoError(t, s.Watch().WaitSettled(ctx, stream, nil))
	c.Stop()

	tasks := stream.Finish()
	require.Len(t, tasks, 1)
	assert.Equal(t, lab.FateDone, tasks[0].Fate)
	assert.Equal(t, 2, tasks[0].Attempts)
	assert.Equal(t, 1, c.Reconnects())
	require.Len(t, ackErrs, 2)
	assert.Error(t, ackErrs[0], "the first ack went nowhere: its connection was cut")
	assert.NoError(t, ackErrs[1])
	var kinds []lab.Kind
	for _, e := range rec.Events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Started, lab.Redelivered, lab.Started, lab.Succeeded, lab.Summary}, kinds)
	n, err := s.Topo().Depth(ctx, "work")
	require.NoError(t, err)
	assert.Equal(t, 0, n, "acked once, gone from the queue")
}

func TestTopologyCheckCatchesMistakes(t *testing.T) {
	bad := []flow.Topology{
		{Queues: []flow.Queue{{Name: "a", DeadLetterTo: "nowhere"}}},
		{Queues: []flow.Queue{{Name: "a"}, {Name: "a"}}},
		{Queues: []flow.Queue{{Name: "w", Role: flow.Wait, DeadLetterTo: "w"}}},
	}
	for _, topo := range bad {
		assert.Error(t, topo.Check(), "%+v", topo)
	}
	assert.NoError(t, sequentialTopology().Check())
	assert.NoError(t, emailLoopTopology(time.Second).Check())
}

func TestRunNamesNeverCollide(t *testing.T) {
	a, b := rabbit.RunNames(), rabbit.RunNames()
	assert.NotEqual(t, a.Prefix, b.Prefix)
	assert.True(t, strings.HasPrefix(a.Of("x"), "qlab-"))
	assert.Equal(t, "x", a.Seed(a.Of("x")))
	assert.Equal(t, "sequential.queue", rabbit.SeedNames().Of("sequential.queue"))
}

// TestClosedSessionDialsNoMore: a probe that comes after Close (a depth
// sample still ticking) gets an error instead of a fresh connection that
// nobody would close.
func TestClosedSessionDialsNoMore(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx := context.Background()
	s, err := rabbit.Open(ctx, url, rabbit.RunNames(), lab.NewClock(1), rabbittest.Logger(t))
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	_, err = s.Topo().Depth(ctx, "anything")
	require.ErrorIs(t, err, rabbit.ErrSessionClosed)
	assert.True(t, s.Connection().IsClosed(), "no new connection was dialled")
}

func TestQuorumSessionDeclaresEveryQueueQuorum(t *testing.T) {
	s := rabbittest.Session(t, 20)
	s.Quorum = true
	ctx := testCtx(t)
	topo := sequentialTopology() // classic in the topology, TTL wait queues included
	require.NoError(t, s.Topo().Declare(ctx, topo), "3.10 quorum queues take x-message-ttl and dead-letter routes")
	for _, q := range topo.Queues {
		require.False(t, q.Quorum, q.Name)
		assert.NoError(t, s.Topo().Redeclare(ctx, q, nil), "%s: the session's own arguments are what it declared", q.Name)
		var pe *rabbit.PreconditionError
		require.ErrorAs(t, s.Topo().Redeclare(ctx, q, rabbit.Arguments(q, s.Names, s.Clock)), &pe,
			"%s: the broker refuses it as a classic queue", q.Name)
		assert.Contains(t, pe.Error(), "x-queue-type")
	}
}

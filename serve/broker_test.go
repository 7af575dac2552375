package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/seeds/raffle"
)

// lockedRecorder keeps events for a test that reads them while the API's
// goroutines may still emit.
type lockedRecorder struct {
	mu     sync.Mutex
	events []lab.Event
}

// Inline: the tests read the last event as soon as a response arrives, so
// the handler's emit must have reached the recorder by then.
func (r *lockedRecorder) Inline() {}

func (r *lockedRecorder) Emit(e lab.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// has reports whether an event of kind about task was recorded.
func (r *lockedRecorder) has(task string, kind lab.Kind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Task == task && e.Kind == kind {
			return true
		}
	}
	return false
}

// all returns a copy of the events recorded so far.
func (r *lockedRecorder) all() []lab.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *lockedRecorder) last() lab.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[len(r.events)-1]
}

// post sends body to base+path and returns the status and JSON answer.
func post(t *testing.T, base, path, body string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var got map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	return resp.StatusCode, got
}

// openTestBroker declares serve's topology under a private prefix on the
// test broker, and a connection of the test's own to look at it.
func openTestBroker(t *testing.T, stream *lab.Stream) (*Broker, *amqp.Connection) {
	t.Helper()
	url := rabbittest.NeedBroker(t)
	ctx, cancel := context.WithCancel(context.Background()) // the router and the worker run until it ends
	t.Cleanup(cancel)
	b, err := OpenBroker(ctx, url, rabbit.RunNames(), Options{Confirms: true, Logger: rabbittest.Logger(t)}, stream)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return b, conn
}

// TestServeEndToEnd runs the API against the real broker: a user and two
// mails land where the seeds say, bad bodies land nowhere, and Close
// deletes exactly what the run declared.
func TestServeEndToEnd(t *testing.T) {
	t.Parallel() // a mail waits 2 s; the broker's names are the test's own
	rec := &lockedRecorder{}
	stream := lab.NewStream("serve", lab.Rabbit, lab.NewClock(1), rec)
	b, conn := openTestBroker(t, stream)
	names := b.Names()
	base, _, _ := serveInBackground(t, New(b.Pub, stream), DrainTimeout)
	ctx := context.Background()

	code, got := post(t, base, UsersPath, `{"name":"John Silva","email":"john@email.com"}`)
	require.Equal(t, http.StatusOK, code, got["error"])
	id := got["id"]
	for _, bad := range []string{`{"name":"x"`, `{"name":"x","email":"nope"}`, `{}`, `{"name":"x","email":"x@example.com","extra":1}`} {
		code, _ := post(t, base, UsersPath, bad)
		assert.Equal(t, http.StatusBadRequest, code, bad)
	}
	msgs, err := rabbit.Inspect(ctx, conn, names.Of(raffle.Queue), 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1, "one user in raffle_queue, no bad body")
	var u User
	require.NoError(t, json.Unmarshal(msgs[0].Body, &u))
	assert.Equal(t, User{ID: id, Name: "John Silva", Email: "john@email.com"}, u)
	assert.Equal(t, names.Run, msgs[0].AppId, "stamped as the run's")
	assert.Empty(t, rabbit.TaskProblem(msgs[0]), "a task of the run to its own readers, never foreign")
	assert.Equal(t, names.Of(raffle.Exchange), msgs[0].Exchange, "it came through raffle_exchange")

	// A mail due now goes straight to mail.queue; one due in 2 s waits in
	// a level queue, and Q11's router sends it on: the worker sends both.
	for _, in := range []time.Duration{0, 2 * time.Second} {
		due := time.Now().Add(in).UTC().Format(time.RFC3339Nano)
		code, got = post(t, base, SchedulePath, `{"to":"r@example.com","subject":"s","scheduledTime":"`+due+`"}`)
		require.Equal(t, http.StatusOK, code, got["error"])
		id := got["id"]
		require.Eventually(t, func() bool { return rec.has(id, lab.Succeeded) }, 30*time.Second, 20*time.Millisecond,
			"the mail due in %v is sent", in)
		if in > 0 {
			assert.True(t, rec.has(id, lab.Moved), "the router moved it")
		}
	}

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, got = post(t, base, SchedulePath, `{"to":"r@example.com","subject":"later","scheduledTime":"`+later+`"}`)
	require.Equal(t, http.StatusOK, code, got["error"])
	assert.Equal(t, "mail.wait.8s", got["queue"])
	depth, err := rabbit.QueueDepth(ctx, conn, names.Of("mail.wait.8s"))
	require.NoError(t, err)
	assert.Equal(t, 1, depth, "a mail due in an hour waits in the longest level")

	require.NoError(t, b.Close(ctx))
	for _, q := range Topology().Queues {
		_, err := rabbit.QueueDepth(ctx, conn, names.Of(q.Name))
		var missing *rabbit.NoQueueError
		assert.True(t, errors.As(err, &missing), "queue %s deleted at shutdown (got %v)", q.Name, err)
	}
	for _, x := range raffle.Topology().Exchanges {
		assert.False(t, exchangeExists(t, conn, names.Of(x.Name)), "exchange %s deleted at shutdown", x.Name)
	}
}

// exchangeExists declares exchange name passively on a channel of its own.
func exchangeExists(t *testing.T, conn *amqp.Connection, name string) bool {
	ch, err := conn.Channel()
	require.NoError(t, err)
	defer ch.Close()
	return ch.ExchangeDeclarePassive(name, "direct", true, false, false, false, nil) == nil
}

// TestServeSeedTrapWithoutConfirms shows the seed's trap on the real
// broker: raffle_queue is gone, so raffle_exchange routes the user
// nowhere. With confirms (mandatory) the broker hands it back and the API
// says 503; without, as the seed publishes, the API says 200 for a user
// the broker dropped.
func TestServeSeedTrapWithoutConfirms(t *testing.T) {
	t.Parallel() // the broker's names are the test's own (openTestBroker)
	rec := &lockedRecorder{}
	stream := lab.NewStream("serve", lab.Rabbit, lab.NewClock(1), rec)
	b, conn := openTestBroker(t, stream)
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDelete(b.Names().Of(raffle.Queue), false, false, false) // the run's own queue
	require.NoError(t, err)
	require.NoError(t, ch.Close())

	confirmed := New(b.Pub, stream)
	base, _, _ := serveInBackground(t, confirmed, DrainTimeout)
	code, got := post(t, base, UsersPath, `{"name":"A","email":"a@example.com"}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, got["error"], "no queue took it")
	assert.Equal(t, OutcomeNotStored, got["outcome"])
	assert.Equal(t, lab.Failed, rec.last().Kind)

	seedWay := NewBrokerPublisher(rabbittest.NeedBroker(t), b.Names(), false, rabbittest.Logger(t))
	t.Cleanup(func() { _ = seedWay.Close(context.Background()) })
	base, _, _ = serveInBackground(t, New(seedWay, stream), DrainTimeout)
	code, got = post(t, base, UsersPath, `{"name":"A","email":"a@example.com"}`)
	assert.Equal(t, http.StatusOK, code, "the seed's 200, for a user no queue holds")
	assert.NotEmpty(t, got["id"])
	assert.Contains(t, rec.last().Note, "WITHOUT a confirm")
	depth, err := rabbit.QueueDepth(context.Background(), conn, b.Names().Of(raffle.DLQ))
	require.NoError(t, err)
	assert.Zero(t, depth, "not dead-lettered either: dropped")
}

// connectionLost reports whether the publisher holds a connection that
// has closed (taking its turn, as a publish does).
func (p *BrokerPublisher) connectionLost() bool {
	if !p.lock(context.Background()) {
		return false
	}
	defer p.unlock()
	return p.s != nil && p.s.Connection().IsClosed()
}

// TestServeBrokerGoneIs503AndBackIs200: the API's broker goes away mid-run
// (a proxy in between is cut): with confirms a user is a 503 with a JSON
// error, within the publish bound; once the broker answers again the
// publisher dials anew and the next user is a 200, in raffle_queue.
func TestServeBrokerGoneIs503AndBackIs200(t *testing.T) {
	t.Parallel() // the broker's names and its proxy are the test's own
	stream := lab.NewStream("serve", lab.Rabbit, lab.NewClock(1), &lockedRecorder{})
	b, conn := openTestBroker(t, stream)
	brokerURL := rabbittest.NeedBroker(t)
	p := rabbittest.StartProxy(t, brokerURL)
	addr := p.Addr()
	pub := NewBrokerPublisher(p.URL(brokerURL), b.Names(), true, rabbittest.Logger(t))
	t.Cleanup(func() { _ = pub.Close(context.Background()) })
	base, _, _ := serveInBackground(t, New(pub, stream), DrainTimeout)
	user := `{"name":"A","email":"a@example.com"}`

	code, got := post(t, base, UsersPath, user)
	require.Equal(t, http.StatusOK, code, got["error"])

	p.Cut()
	require.Eventually(t, func() bool { return pub.connectionLost() }, 5*time.Second, 10*time.Millisecond,
		"the publisher saw its connection drop")
	start := time.Now()
	code, got = post(t, base, UsersPath, user)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, OutcomeNotPublished, got["outcome"], got["error"])
	assert.Contains(t, got["error"], "nothing was published")
	assert.NotContains(t, got["error"], "guest", "no broker user in the answer")
	assert.NotContains(t, got["error"], "127.0.0.1", "no broker address in the answer")
	assert.Less(t, time.Since(start), PublishTimeout+2*time.Second, "bounded")

	rabbittest.StartProxyOn(t, addr, brokerURL) // the broker is back, at the same address
	code, got = post(t, base, UsersPath, user)
	assert.Equal(t, http.StatusOK, code, got["error"])
	depth, err := rabbit.QueueDepth(context.Background(), conn, b.Names().Of(raffle.Queue))
	require.NoError(t, err)
	assert.Equal(t, 2, depth, "the two users answered 200 are there; the 503 one is not")
}

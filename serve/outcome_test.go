package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// postUser posts body as a user and returns the status and the JSON
// answer; unlike post it may run outside the test's goroutine.
func postUser(base, body string) (int, map[string]string, error) {
	resp, err := http.Post(base+UsersPath, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var got map[string]string
	err = json.NewDecoder(resp.Body).Decode(&got)
	return resp.StatusCode, got, err
}

// TestServeBrokerStoppedBeforeItsConfirmIsUnknown is the case on
// a private node: the broker stores a user, then stops before its
// confirm reaches the API (the proxy drops it, as a stop under load
// does). The API must not say "not published": the answer is a 504 with
// outcome "unknown" and the id, the stream keeps the user as enqueued,
// and after the node is back the user is in raffle_queue, under that id.
func TestServeBrokerStoppedBeforeItsConfirmIsUnknown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private RabbitMQ node")
	}
	t.Parallel() // a node of its own, started beside the other tests' waits
	n := rabbittest.StartNode(t)
	rec := &lockedRecorder{}
	stream := lab.NewStream("serve", lab.Rabbit, lab.NewClock(1), rec)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b, err := OpenBroker(ctx, n.URL, rabbit.RunNames(), Options{Confirms: true, Logger: rabbittest.Logger(t)}, stream)
	require.NoError(t, err)
	names := b.Names()
	p := rabbittest.StartProxy(t, n.URL)
	pub := NewBrokerPublisher(p.URL(n.URL), names, true, rabbittest.Logger(t))
	t.Cleanup(func() { _ = pub.Close(context.Background()) })
	api := New(pub, stream)
	base, _, _ := serveInBackground(t, api, DrainTimeout)

	code, got := post(t, base, UsersPath, `{"name":"A","email":"a@example.com"}`)
	require.Equal(t, http.StatusOK, code, got["error"])
	p.Mute()
	answered := make(chan struct{})
	var code2 int
	var got2 map[string]string
	var err2 error
	go func() {
		defer close(answered)
		code2, got2, err2 = postUser(base, `{"name":"B","email":"b@example.com"}`)
	}()
	depth := func() int {
		conn, err := amqp.Dial(n.URL)
		if err != nil {
			return -1
		}
		defer conn.Close()
		d, err := rabbit.QueueDepth(context.Background(), conn, names.Of(raffle.Queue))
		if err != nil {
			return -1
		}
		return d
	}
	require.Eventually(t, func() bool { return depth() == 2 }, 20*time.Second, 50*time.Millisecond,
		"the broker stored the second user")
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stopCancel()
	_, err = n.Ctl(stopCtx, "stop_app")
	require.NoError(t, err)
	select {
	case <-answered:
	case <-time.After(PublishTimeout + 5*time.Second):
		t.Fatal("no answer within the publish bound")
	}
	require.NoError(t, err2)
	assert.Equal(t, http.StatusGatewayTimeout, code2, "no confirm came: not a 503: %v", got2)
	assert.Equal(t, OutcomeUnknown, got2["outcome"])
	assert.NotEmpty(t, got2["id"], "the client gets the id to look for")
	assert.Contains(t, got2["error"], "may create it twice")
	assert.NotContains(t, got2["error"], "guest", "no broker user in the answer")
	assert.True(t, rec.has(got2["id"], lab.Enqueued), "the stream keeps the unknown user as enqueued")

	_, err = n.Ctl(stopCtx, "start_app")
	require.NoError(t, err)
	require.NoError(t, n.AwaitUp(stopCtx))
	conn, err := amqp.Dial(n.URL)
	require.NoError(t, err)
	defer conn.Close()
	msgs, err := rabbit.Inspect(stopCtx, conn, names.Of(raffle.Queue), 0)
	require.NoError(t, err)
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.MessageId)
	}
	assert.Contains(t, ids, got2["id"], "the user answered \"unknown\" was stored")
	assert.Equal(t, []string{got2["id"]}, api.Unknown(), "the API remembers what it answered 504")

	// At Close the queues go, and the unknown user with them if it was
	// stored; its lost event must not claim it was (it may not have been).
	closeCtx, closeCancel := context.WithTimeout(context.Background(), time.Minute)
	defer closeCancel()
	_ = b.Close(closeCtx, api.Unknown()...) // the node is private and removed with the test
	var notes []string
	for _, e := range rec.all() {
		if e.Kind == lab.Lost && e.Task == got2["id"] {
			notes = append(notes, e.Note)
		}
	}
	assert.Equal(t, []string{UnknownLost}, notes, "one lost event, saying the outcome is unknown")
}

// TestServeRealNackIsNotStored: a queue at its x-max-length with
// x-overflow reject-publish makes RabbitMQ nack the publish (basic.nack)
// on a channel that stays open: that, and only that, is "not stored".
func TestServeRealNackIsNotStored(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	names := rabbit.RunNames()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	full := names.Of("full")
	_, err = ch.QueueDeclare(full, false /* durable */, false /* autoDelete */, false /* exclusive */, false, /* noWait */
		amqp.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = ch.QueueDelete(full, false, false, false)
		_ = ch.Close()
	})
	pub := NewBrokerPublisher(url, names, true, rabbittest.Logger(t))
	t.Cleanup(func() { _ = pub.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = pub.Publish(ctx, Route{Key: "full"}, rabbit.Publishing("n1", nil))
	assert.True(t, errors.Is(err, ErrNotStored), "a basic.nack is not stored: %v", err)
	assert.False(t, errors.Is(err, ErrUnknown), "and not unknown")
	assert.Contains(t, err.Error(), "nack")
}

// answer is one response of the load test: its status, outcome and the
// id it named (a 200's or a 504's).
type answer struct {
	code    int
	outcome string
	id      string
}

// TestServeBrokerStoppedUnderLoadKeepsItsWord is the measurement
// as a test, on a private node: clients post users while the node is
// stopped (stop_app) and started again. Whatever the timing, the answers
// must agree with raffle_queue afterwards: every 200 is there, no 503 is
// (the broker did not have it), and every user there was answered 200 or
// 504 "unknown".
func TestServeBrokerStoppedUnderLoadKeepsItsWord(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and stops a RabbitMQ node")
	}
	t.Parallel() // a node of its own, started beside the other tests' waits
	n := rabbittest.StartNode(t)
	stream := lab.NewStream("serve", lab.Rabbit, lab.NewClock(1), &lockedRecorder{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b, err := OpenBroker(ctx, n.URL, rabbit.RunNames(), Options{Confirms: true, Logger: rabbittest.Logger(t)}, stream)
	require.NoError(t, err)
	base, _, _ := serveInBackground(t, New(b.Pub, stream), DrainTimeout)

	var mu sync.Mutex
	var answers []answer
	stop := make(chan struct{})
	var clients sync.WaitGroup
	for range 8 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, got, err := postUser(base, `{"name":"L","email":"l@example.com"}`)
				if err != nil {
					continue
				}
				mu.Lock()
				answers = append(answers, answer{code, got["outcome"], got["id"]})
				mu.Unlock()
				if code != http.StatusOK {
					time.Sleep(20 * time.Millisecond) // a client backs off; and the machine is shared
				}
			}
		}()
	}
	ctl, ctlCancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer ctlCancel()
	time.Sleep(2 * time.Second)
	_, err = n.Ctl(ctl, "stop_app")
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	_, err = n.Ctl(ctl, "start_app")
	require.NoError(t, err)
	require.NoError(t, n.AwaitUp(ctl))
	time.Sleep(3 * time.Second)
	close(stop)
	clients.Wait()

	conn, err := amqp.Dial(n.URL)
	require.NoError(t, err)
	defer conn.Close()
	msgs, err := rabbit.Inspect(ctl, conn, b.Names().Of(raffle.Queue), 0)
	require.NoError(t, err)
	stored := map[string]bool{}
	for _, m := range msgs {
		stored[m.MessageId] = true
	}
	tally := map[string]int{}
	for _, a := range answers {
		key := fmt.Sprintf("%d %s", a.code, a.outcome)
		tally[key]++
		switch a.code {
		case http.StatusOK:
			assert.True(t, stored[a.id], "a 200 user is in raffle_queue: %s", a.id)
		case http.StatusGatewayTimeout:
			assert.Equal(t, OutcomeUnknown, a.outcome)
			delete(stored, a.id) // there or not: either is true to its answer
		case http.StatusServiceUnavailable:
			assert.Contains(t, []string{OutcomeNotPublished, OutcomeNotStored}, a.outcome)
		default:
			t.Errorf("unexpected answer %v", a)
		}
	}
	for _, a := range answers {
		if a.code == http.StatusOK {
			delete(stored, a.id)
		}
	}
	assert.Empty(t, stored, "every user in raffle_queue was answered 200 or 504")
	assert.Positive(t, tally["200 "], "users before and after the stop")
	assert.Positive(t, tally["503 not_published"], "users while the node was stopped")
	t.Logf("RabbitMQ node stopped 2 s under 8 clients: answers %v; raffle_queue holds %d", tally, len(msgs))
	closeCtx, closeCancel := context.WithTimeout(context.Background(), time.Minute)
	defer closeCancel()
	_ = b.Close(closeCtx) // the node is private and removed with the test
}

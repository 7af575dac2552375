package lessons

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// forgedPrefix starts the message id of every message the test publishes
// itself, so an event or a held message can be traced to it.
const forgedPrefix = "forged-"

// forgeries are the messages someone else publishes straight into a
// lesson's queue bq: the run's id is run. Some carry the run's app-id,
// so only their shape gives them away.
func forgeries(run, bq string, big bool) []amqp.Publishing {
	jsonTask := func(id string) []byte { return []byte(`{"task":"` + id + `"}`) }
	ms := []amqp.Publishing{
		{MessageId: forgedPrefix + "not-json", Body: []byte("not json {")},
		{MessageId: forgedPrefix + "missing-fields", AppId: run, ContentType: "application/json", Body: []byte(`{"to":""}`)},
		{MessageId: forgedPrefix + "wrong-type", AppId: run, ContentType: "text/plain", Body: jsonTask(forgedPrefix + "wrong-type")},
		{MessageId: "", AppId: run, ContentType: "application/json", Body: jsonTask("")},
		{MessageId: forgedPrefix + "x-death", ContentType: "application/json", Body: jsonTask(forgedPrefix + "x-death"),
			Headers: amqp.Table{"x-death": []any{amqp.Table{"count": int64(1000), "reason": "rejected", "queue": bq, "exchange": "", "time": time.Now()}}}},
	}
	if big {
		// 1 MB here: 10 MB took a prefetch-1 consumer 3 to 6 s to receive
		// and copy to the hold queue under -race on a loaded machine, long
		// enough for the run's stall bound; rabbit's TestHugeMessageIsHeld
		// holds 10 MB.
		pad := strings.Repeat("x", 1<<20)
		ms = append(ms, amqp.Publishing{MessageId: forgedPrefix + "1MB", AppId: run, ContentType: "application/json",
			Body: []byte(`{"task":"` + forgedPrefix + `1MB","pad":"` + pad + `"}`)})
	}
	if strings.Contains(bq, "wait") || strings.Contains(bq, "delay") {
		// Nobody consumes a wait or delay queue (every lesson names them
		// so), and one with per-message TTLs (Q11's mail.delay) expires
		// only its head: a forgery with no TTL there would hold the run's
		// own mails behind it for ever. Expiring, it moves on along the
		// queue's dead-letter route to a consumer, which holds it.
		for i := range ms {
			ms[i].Expiration = "1000"
		}
	}
	if bq == run+".mail.queue" {
		// Q11's mail worker reads the body: a task of the right shape with
		// no recipient must be held, not "sent" to nobody. mail.queue is
		// consumed throughout, so this one needs no TTL.
		ms = append(ms, amqp.Publishing{MessageId: forgedPrefix + "no-recipient", AppId: run, ContentType: "application/json",
			Body: []byte(`{"task":"` + forgedPrefix + `no-recipient","to":"","scheduledTime":"2026-02-08T11:39:51Z"}`)})
	}
	return ms
}

// injector publishes forgeries into each queue of the run as the run's
// events first name it, before the run goes on: Emit hands the queue over
// and waits until its forgeries are on the broker, so they are there
// whatever the machine's load. The publishing goroutine is the test's,
// not the run's, so the run's leak check does not count it.
type injector struct {
	names    rabbit.Names
	seen     map[string]bool // seed queue names already handed over; Emit's only
	queues   chan string
	done     chan struct{} // one value per queue handed over, once published
	injected int
}

func newInjector(names rabbit.Names) *injector {
	return &injector{names: names, seen: map[string]bool{}, queues: make(chan string), done: make(chan struct{})}
}

// Inline makes the injector a lab.Inline sink: the emitter calls Emit
// itself, so the run waits for the forgeries (a test's privilege).
func (in *injector) Inline() {}

// Emit hands over each queue an event first names, as where a task is or
// where it goes, and waits (bounded) for its forgeries to be published.
// The stream calls it from one goroutine at a time.
func (in *injector) Emit(e lab.Event) {
	for _, q := range []string{e.Queue, e.To} {
		if q == "" || in.seen[q] {
			continue
		}
		in.seen[q] = true
		in.queues <- q
		select {
		case <-in.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// run publishes until queues closes. Queues that are not the broker's
// (an in-process "scheduler memory") route nowhere and are dropped.
func (in *injector) run(t *testing.T, url string, finished chan<- struct{}) {
	defer close(finished)
	conn, err := amqp.Dial(url)
	if !assert.NoError(t, err) {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if !assert.NoError(t, err) {
		return
	}
	first := true
	for seed := range in.queues {
		bq := in.names.Of(seed)
		for _, m := range forgeries(in.names.Run, bq, first) {
			if err := ch.PublishWithContext(context.Background(), "", bq, false, false, m); err != nil {
				t.Errorf("publishing into %s: %v", bq, err)
			}
			in.injected++
		}
		first = false
		in.done <- struct{}{}
	}
}

// TestForeignAndMalformedMessagesAreHeld publishes, into every queue of
// every broker lesson while it runs, messages the run did not publish or
// cannot read: not JSON, JSON with fields missing, a wrong content type,
// no message id, a forged x-death, 1 MB. The run must end without error
// (no worker crashed), every task of its own accounted for, no event and
// no measured table about a forged message, and what was held must wait
// in the run's hold queue with a reason.
func TestForeignAndMalformedMessagesAreHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("make quick: one broker pass; the forged messages are make test's")
	}
	t.Parallel() // beside the package's other broker suites: the runs mostly wait on the broker's timers
	for _, l := range All {
		if l.Rabbit == nil {
			continue
		}
		t.Run(l.ID, func(t *testing.T) {
			t.Parallel()
			url := rabbittest.NeedBroker(t)
			if l.MinBroker != "" { // Q25 runs on the 4.3 node: forge there, and look there
				url = rabbittest.Need(t, rabbittest.V43)
			}
			names := rabbit.RunNames()
			hold := names.Run + ".foreign"
			t.Cleanup(func() { rabbittest.DeleteHold(t, url, names.Run) })
			in := newInjector(names)
			finished := make(chan struct{})
			go in.run(t, url, finished)
			// Brief: this checks the stream and the tables, not figures.
			opts := lesson.Options{Names: rabbitenv.Of(names), Broker: url, Brief: true}
			events, res := lessontest.RunRabbitWith(t, l, opts, in)
			close(in.queues)
			<-finished

			labtest.AssertAccounted(t, events)
			for _, e := range events {
				if e.Kind != lab.Breaker && e.Kind != lab.Phase && e.Kind != lab.Alerted {
					assert.NotEmpty(t, e.Task, "an event with no task: %+v", e)
				}
				assert.False(t, strings.HasPrefix(e.Task, forgedPrefix), "an event about a forged message: %+v", e)
			}
			for _, tb := range res.Tables {
				var text strings.Builder
				tb.Write(&text)
				assert.NotContains(t, text.String(), forgedPrefix, "table %q counts a forged message", tb.Title)
			}
			require.Positive(t, in.injected)
			assertHeld(t, url, hold)
		})
	}
}

// assertHeld checks that the hold queue holds at least one message and
// that each is a forgery with the reason it was held.
func assertHeld(t *testing.T, url, hold string) {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	defer ch.Close()
	held := 0
	for {
		d, ok, err := ch.Get(hold, false) // left unacked: Cleanup deletes the queue
		require.NoError(t, err, "the hold queue %s exists", hold)
		if !ok {
			break
		}
		held++
		reason, _ := d.Headers[rabbit.ForeignReasonHeader].(string)
		assert.NotEmpty(t, reason, "held message %q has no reason", d.MessageId)
		assert.True(t, d.MessageId == "" || strings.HasPrefix(d.MessageId, forgedPrefix), "held a message of the run: %q", d.MessageId)
	}
	assert.Positive(t, held, "nothing was held in %s", hold)
}

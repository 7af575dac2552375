package q22

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
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
	"github.com/queuelab/qlab/metrics"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
)

// cell is the value of a metric's row in the "What the metrics said" table.
func cell(t *testing.T, res lesson.Result, metric string) string {
	t.Helper()
	table := lessontest.TableTitled(t, res.Tables, "What the metrics said")
	for _, row := range table.Rows {
		if row[0] == metric {
			return row[1]
		}
	}
	t.Fatalf("no row for %s", metric)
	return ""
}

// namesAllEleven: the "What the metrics said" table has a row for each
// of seed 003's eleven names and no other, and the consume duration
// counts one observation per attempt: each ended in an ack or a nack.
func namesAllEleven(t *testing.T, res lesson.Result) {
	t.Helper()
	table := lessontest.TableTitled(t, res.Tables, "What the metrics said")
	var names []string
	for _, row := range table.Rows {
		names = append(names, row[0])
	}
	assert.ElementsMatch(t, allNames, names, "the seed's eleven names, each once")
	acks, err := strconv.Atoi(cell(t, res, metrics.AckTotal))
	require.NoError(t, err)
	nacks, err := strconv.Atoi(cell(t, res, metrics.NackTotal))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(cell(t, res, metrics.ConsumeDuration), fmt.Sprintf("n=%d, mean ", acks+nacks)),
		"one consume duration per attempt, acked or nacked")
}

// everyTaskDone: the twenty tasks of both parts end done.
func everyTaskDone(t *testing.T, events []lab.Event) {
	t.Helper()
	n := 0
	for _, e := range events {
		if e.Kind == lab.Summary {
			n++
			assert.Equal(t, lab.FateDone, e.Fate, e.Task)
		}
	}
	assert.Equal(t, 2*Published, n)
}

// TestQ22InMemory: the outage's ten failures are ten nacks, the depth
// trap holds in memory too (five in the consumer's hands are not in the
// queue), no redelivery, and no timestamp table without a broker.
func TestQ22InMemory(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	everyTaskDone(t, events)
	assert.Equal(t, "10", cell(t, res, metrics.NackTotal))
	assert.Equal(t, "20", cell(t, res, metrics.AckTotal))
	assert.Equal(t, "0", cell(t, res, metrics.RedeliveryTotal))
	assert.Equal(t, "5 of 10", cell(t, res, metrics.Depth))
	namesAllEleven(t, res)
	for _, table := range res.Tables {
		assert.NotContains(t, table.Title, "timestamp", "no wire in memory")
		assert.NotContains(t, table.Title, "broker's own", "no broker in memory")
	}
	_, attempts := labtest.Summary(t, events, "m01")
	assert.Equal(t, 2, attempts, "the outage's failure, then the send")
}

// TestQ22DepthTrapAndCrashOnRabbitMQ: on the broker a passive declare
// counts ready messages only: 5 of the 10 published while a prefetch-5
// consumer holds the other 5 unacked. The cut connections make the
// redelivery counter move, and no task is lost.
func TestQ22DepthTrapAndCrashOnRabbitMQ(t *testing.T) {
	for _, line := range []string{"3.10", "4.3"} {
		t.Run(line, func(t *testing.T) {
			url, version := rabbittest.NeedVersion(t, line)
			assertQ22OnBroker(t, url, version)
		})
	}
}

// assertQ22OnBroker runs Q22 on the broker at url, of version: the
// metrics read the same on RabbitMQ 3.10.8 and 4.3, and the table says
// which broker it measured.
func assertQ22OnBroker(t *testing.T, url, version string) {
	events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{Broker: url})
	everyTaskDone(t, events)
	said := lessontest.TableTitled(t, res.Tables, "What the metrics said")
	assert.Contains(t, said.Title, "(RabbitMQ "+version+")")
	assert.Contains(t, strings.Join(said.Notes, " "), "RabbitMQ "+version+" (this broker)")
	assert.Equal(t, "5 of 10", cell(t, res, metrics.Depth), "ready only: the unacked are not counted")
	// Every first attempt of the outage fails: ten nacks at least. A cut
	// that hands a message out again while the DB is still away fails
	// that attempt too (12 on a loaded machine): the counter counts each
	// failed attempt the stream reports.
	nacks, err := strconv.Atoi(cell(t, res, metrics.NackTotal))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, nacks, Published)
	assert.Equal(t, len(labtest.OfKind(events, lab.Failed)), nacks, "one nack per failed attempt")
	namesAllEleven(t, res)
	ts := lessontest.TableTitled(t, res.Tables, "The timestamp trap")
	assert.Contains(t, fmt.Sprint(ts.Rows), "amqplib "+AmqplibVersion+", timestamp: Date.now()")
	assert.Contains(t, fmt.Sprint(ts.Rows), "the year 58", "a spec reader of amqplib's stamp")
	// Served or not (the shared 3.10.8 runs no plugin), the run goes on.
	lessontest.TableTitled(t, res.Tables, "The broker's own figures")
	redelivered := 0
	for _, e := range events {
		if e.Kind == lab.Redelivered {
			redelivered++
		}
	}
	assert.NotZero(t, redelivered, "the cut made the broker deliver again")
	assert.Equal(t, fmt.Sprint(float64(redelivered)), cell(t, res, metrics.RedeliveryTotal), "the counter is the stream's own count")
}

// TestTimestampTrapOnRabbitMQ: a message published 700 ms past a second
// comes back with its timestamp property cut to the whole second, and its
// millisecond header whole.
func TestTimestampTrapOnRabbitMQ(t *testing.T) {
	conn, err := amqp.Dial(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	defer conn.Close()
	sent := time.Date(2026, 11, 25, 6, 0, 15, 700*int(time.Millisecond), time.UTC)
	st, err := RoundTrip(context.Background(), conn, sent)
	require.NoError(t, err)
	assert.Equal(t, sent.Truncate(time.Second), st.Timestamp.UTC(), "AMQP 0-9-1 timestamps are whole seconds")
	assert.Equal(t, 700*time.Millisecond, sent.Sub(st.Timestamp))
	assert.Equal(t, sent.UnixMilli(), st.HeaderMs, "the header keeps the milliseconds")
	js, err := RoundTripAmqplib(context.Background(), conn, sent)
	require.NoError(t, err)
	assert.Equal(t, sent.UnixMilli(), js.Timestamp.Unix(), "amqplib's Date.now() travels as milliseconds")
	assert.Equal(t, 58869, js.Timestamp.UTC().Year(), "read as AMQP's seconds, 2026-11-25 06:00 is the year 58869")
}

// needPrometheus skips t, or fails it under QLAB_REQUIRE_BROKER=1, when
// the broker at url serves no rabbitmq_prometheus where Q22 looks.
func needPrometheus(t *testing.T, url string) {
	t.Helper()
	base, _, err := PrometheusBase(url)
	require.NoError(t, err)
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(base + "/metrics/detailed?family=queue_coarse_metrics")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %s", resp.Status)
		}
	}
	if err != nil {
		rabbittest.SkipOrFail(t, fmt.Errorf("no rabbitmq_prometheus at %s (scripts/rabbitmq.sh "+
			"down 4.3 && scripts/rabbitmq.sh up 4.3 starts a node that serves it): %w", base, err))
	}
}

// TestBrokerFiguresOnRabbitMQ43: on the 4.3 node, which serves
// rabbitmq_prometheus (scripts/rabbitmq.sh enables it), Q22 sets the
// broker's own figures for the run's queues beside the lab's: at the
// depth trap the broker counts 5 ready (the lab's depth) and 5 unacked; at
// the end it counts the 20 publishes, the lab's redeliveries, one ack per
// task, and nothing left. Where the table says "agree", the two are equal.
func TestBrokerFiguresOnRabbitMQ43(t *testing.T) {
	url, version := rabbittest.NeedVersion(t, "4.3")
	needPrometheus(t, url)
	events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{Broker: url})
	everyTaskDone(t, events)
	table := lessontest.TableTitled(t, res.Tables, "The broker's own figures")
	assert.Equal(t, "The broker's own figures (rabbitmq_prometheus, RabbitMQ "+version+")", table.Title)
	rows := map[string][]string{}
	for _, r := range table.Rows {
		require.Len(t, r, 4)
		rows[r[0]] = r[1:]
		if strings.HasPrefix(r[3], "agree") {
			assert.Equal(t, r[1], r[2], "%s: said to agree", r[0])
		}
	}
	assert.Equal(t, []string{"5", "5"}, rows["queue_messages_ready, held"][:2], "ready only, as the depth")
	assert.Equal(t, []string{"-", "5"}, rows["queue_messages_unacked, held"][:2], "in the consumer's hands")
	assert.Equal(t, []string{"1", "1"}, rows["queue_consumers, held"][:2])
	assert.Equal(t, []string{"20", "20"}, rows["queue_exchange_messages_published_total"][:2])
	redelivered := rows["queue_messages_redelivered_total"]
	assert.Equal(t, redelivered[0], redelivered[1], "the lab saw every redelivery the broker counted")
	assert.NotEqual(t, "0", redelivered[1], "the cut made the broker deliver again")
	acked := rows["queue_messages_acked_total"]
	assert.Equal(t, "20", acked[1], "one ack per task reached the broker")
	assert.Equal(t, cell(t, res, metrics.AckTotal), acked[0])
	assert.Equal(t, []string{"0", "0"}, rows["queue_messages_ready + _unacked"][:2])
	assert.Contains(t, rows, "queue_messages_delivered_ack_total")
	assert.NotContains(t, strings.Join(table.Notes, " "), "Never settled")
	assert.Empty(t, table.Cuts(render.LayoutFor(render.DefaultWidth)), "at 80 columns no word splits")
}

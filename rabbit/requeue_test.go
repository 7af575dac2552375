package rabbit_test

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestRequeuePlaceIsMeasured holds RequeuePlace to the broker: three
// messages A B C, one consumer at prefetch 1 nacks A (requeue) once; the
// order of the next three deliveries says where A went back. A classic
// queue gives A again at once; a quorum queue gives B and C first on
// 3.10.8 without x-delivery-limit (the tail), and A again at once on
// 3.10.8 with one and on 4.3.6 (the head).
func TestRequeuePlaceIsMeasured(t *testing.T) {
	type kind struct{ quorum, limited bool }
	classic, quorum, limited := kind{}, kind{quorum: true}, kind{quorum: true, limited: true}
	want := map[string]map[kind]string{
		"3.10": {classic: "A A B", quorum: "A B C", limited: "A A B"},
		"4.3":  {classic: "A A B", quorum: "A A B", limited: "A A B"},
	}
	for line, byKind := range want {
		t.Run(line, func(t *testing.T) {
			url, version := rabbittest.NeedVersion(t, line)
			for k, order := range byKind {
				got := requeueOrder(t, url, k.quorum, k.limited)
				assert.Equal(t, order, got, "%+v on %s", k, version)
				place := rabbit.RequeuePlace(k.quorum, k.limited, version)
				if got == "A B C" {
					assert.Contains(t, place, "at the tail", "%+v on %s", k, version)
				} else {
					assert.NotContains(t, place, "at the tail:", "%+v on %s", k, version)
				}
			}
		})
	}
}

// requeueOrder publishes A B C to a fresh queue (a quorum one with
// x-delivery-limit 5 when limited), nacks A with requeue on its first
// delivery, and returns the first three deliveries' bodies.
func requeueOrder(t *testing.T, url string, quorum, limited bool) string {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	typ := "classic"
	if quorum {
		typ = "quorum"
	}
	args := amqp.Table{"x-queue-type": typ}
	if limited {
		typ += "-limited"
		args["x-delivery-limit"] = int64(5)
	}
	q := rabbit.RunNames().Of("requeue-place-" + typ)
	_, err = ch.QueueDeclare(q, true, false, false, false, args) // durable
	require.NoError(t, err)
	defer func() { _, _ = ch.QueueDelete(q, false, false, false) }()
	require.NoError(t, ch.Confirm(false))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 3))
	for _, b := range []string{"A", "B", "C"} {
		require.NoError(t, ch.Publish("", q, false, false, amqp.Publishing{Body: []byte(b)}))
	}
	for range 3 {
		select {
		case c := <-confirms:
			require.True(t, c.Ack)
		case <-time.After(10 * time.Second):
			t.Fatal("no confirm within 10 s")
		}
	}
	require.NoError(t, ch.Qos(1, 0, false))
	ds, err := ch.Consume(q, "", false, false, false, false, nil)
	require.NoError(t, err)
	var got []string
	for len(got) < 3 {
		select {
		case d := <-ds:
			got = append(got, string(d.Body))
			if len(got) == 1 {
				require.NoError(t, d.Nack(false, true)) // multiple, requeue
			} else {
				require.NoError(t, d.Ack(false))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("after %v, no delivery within 10 s", got)
		}
	}
	return got[0] + " " + got[1] + " " + got[2]
}

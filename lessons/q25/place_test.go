package q25

import (
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestHeldPlaceIsMeasured holds the place the lesson's lines name
// (rabbit.RequeuePlace of a quorum queue with x-delivery-limit) to the
// broker, also when the queue holds what it is handed back: A B C D in
// the lesson's queue (delayed retry type failed, 300 ms, limit 5), one
// consumer at prefetch 1. A is handed back on its first delivery; the
// next, B, stays unacked for a second, past A's wait; the next two say
// where A went. On 4.3.6 a reject or a closed channel holds A and then
// hands it out before C (at the head), a nack hands it out again at once;
// 3.10.8 ignores the delayed retry arguments and, the queue having a
// delivery limit, hands A out again at once whichever way it came back.
func TestHeldPlaceIsMeasured(t *testing.T) {
	want := map[string]map[Settle]string{
		"3.10": {Nack: "A A B C", Reject: "A A B C", Close: "A A B C"},
		"4.3":  {Nack: "A A B C", Reject: "A B A C", Close: "A B A C"},
	}
	for line, bySettle := range want {
		t.Run(line, func(t *testing.T) {
			url, version := rabbittest.NeedVersion(t, line)
			for s, order := range bySettle {
				got := heldOrder(t, url, s)
				assert.Equal(t, order, got, "%s on %s", s, version)
				place := rabbit.RequeuePlace(true, true, version)
				if strings.Count(got, "A") > 1 { // A again before C and D
					assert.Contains(t, place, "at the head", "%s: %s", s, got)
				} else {
					assert.Contains(t, place, "at the tail", "%s: %s", s, got)
				}
			}
		})
	}
}

// heldOrder publishes A B C D to a fresh delayed-retry queue, hands A back
// with s on its first delivery, keeps the second delivery unacked for a
// second (past A's 300 ms wait), and returns the first four deliveries.
func heldOrder(t *testing.T, url string, s Settle) string {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	q := rabbit.RunNames().Of("held-place-" + string(s))
	args := Arguments(TypeFailed, 300*time.Millisecond, time.Second, DeliveryLimit, "")
	_, err = ch.QueueDeclare(q, true, false, false, false, args) // durable
	require.NoError(t, err)
	defer func() { _, _ = ch.QueueDelete(q, false, false, false) }()
	rabbittest.Publish(t, conn, q, "A", "B", "C", "D")
	consume := func() (*amqp.Channel, <-chan amqp.Delivery) {
		c, err := conn.Channel()
		require.NoError(t, err)
		require.NoError(t, c.Qos(1, 0, false))
		ds, err := c.Consume(q, "", false, false, false, false, nil)
		require.NoError(t, err)
		return c, ds
	}
	cch, ds := consume()
	var got []string
	for len(got) < 4 {
		select {
		case d := <-ds:
			got = append(got, string(d.Body))
			switch {
			case len(got) == 1 && s == Nack:
				require.NoError(t, d.Nack(false, true)) // multiple, requeue
			case len(got) == 1 && s == Reject:
				require.NoError(t, d.Reject(true)) // requeue
			case len(got) == 1: // Close: the broker takes A back unacked
				require.NoError(t, cch.Close())
				cch, ds = consume()
			case len(got) == 2:
				time.Sleep(time.Second) // A's wait ends while B holds the slot
				require.NoError(t, d.Ack(false))
			default:
				require.NoError(t, d.Ack(false))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("after %v, no delivery within 10 s", got)
		}
	}
	return strings.Join(got, " ")
}

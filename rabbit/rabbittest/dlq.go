package rabbittest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/rabbit"
)

// ForeignQueue declares a durable queue with args directly with
// amqp091-go, as someone outside the lab would, under a random name
// (a fresh run id's hex and "-dlqtest": the run id is recorded for make
// test's clean-up, so a killed test's queue goes too), publishes each of bodies to it (persistent,
// message id m1, m2, …, header "n" = its position) with confirms, and
// deletes it when the test ends. It returns an open connection (closed at
// the end too) and the queue's name.
func ForeignQueue(t testing.TB, args amqp.Table, bodies ...string) (*amqp.Connection, string) {
	t.Helper()
	conn, err := amqp.Dial(NeedBroker(t))
	if err != nil {
		t.Fatalf("dialling the broker: %v", err)
	}
	name := strings.TrimPrefix(rabbit.RunNames().Run, "qlab-") + "-dlqtest"
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("opening a channel: %v", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(name, true /* durable */, false /* autoDelete */, false /* exclusive */, false /* noWait */, args); err != nil {
		t.Fatalf("declaring %s: %v", name, err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
		}
		_ = conn.Close()
	})
	Publish(t, conn, name, bodies...)
	return conn, name
}

// Publish publishes bodies to queue name with confirms, as ForeignQueue
// does (message ids continue from the queue's depth).
func Publish(t testing.TB, conn *amqp.Connection, name string, bodies ...string) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("opening a channel: %v", err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("finding %s: %v", name, err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatalf("confirm mode: %v", err)
	}
	// One channel keeps the order; the confirms are awaited together, as
	// one fsync batch, and the bound is a busy machine's, not a quiet one's.
	ctx, cancel := context.WithTimeout(context.Background(), brokerBound)
	defer cancel()
	confirms := make([]*amqp.DeferredConfirmation, len(bodies))
	for i, body := range bodies {
		n := q.Messages + i + 1
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", name, false, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent, ContentType: "application/json", MessageId: "m" + strconv.Itoa(n),
			Headers: amqp.Table{"n": int32(n)}, Body: []byte(body),
		})
		if err != nil {
			t.Fatalf("publishing to %s: %v", name, err)
		}
		confirms[i] = dc
	}
	for _, dc := range confirms {
		if ok, err := dc.WaitContext(ctx); err != nil || !ok {
			t.Fatalf("confirm for %s: ack %v, err %v", name, ok, err)
		}
	}
}

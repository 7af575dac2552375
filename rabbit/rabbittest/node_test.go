package rabbittest

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestPrivateNode starts a node of its own, sees a queue declared there
// (and not on the shared node), has the broker close the connection, and
// removes the node.
func TestPrivateNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a RabbitMQ node")
	}
	t.Parallel() // a node starts mostly waiting: beside the others
	n := StartNode(t)
	conn, err := amqp.Dial(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("qlabtest.private", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	queues, err := n.Queues(ctx)
	if err != nil || len(queues) != 1 || queues[0] != "qlabtest.private" {
		t.Fatalf("queues on the private node = %q, %v; want [qlabtest.private]", queues, err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	if _, err := n.Ctl(ctx, "close_all_connections", "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		if err == nil || err.Code != amqp.ConnectionForced {
			t.Fatalf("close reason = %v, want 320 CONNECTION_FORCED", err)
		}
	case <-ctx.Done():
		t.Fatal("the broker did not close the connection")
	}
}

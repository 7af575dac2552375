package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/rabbit/cluster/clustertest"
)

// TestClusterQuorumFailover is the quick quorum check on the
// package's cluster (clustertest: under make test the one every package
// shares): a quorum queue gets 100 confirmed messages, its leader's node
// is stopped, another node delivers all 100, a new leader leads, and the
// node comes back. Up, Load and Down of a cluster of its own, and Down of
// a stopped node, are cmd/qlab's TestBrokerClusterLifecycle.
func TestClusterQuorumFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node RabbitMQ cluster (about half a minute)")
	}
	c := clustertest.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	queue := fmt.Sprintf("qlabtest.quorum.%04x", rand.IntN(1<<16))
	const n = 100
	publishQuorum(ctx, t, c.URLs()[0], queue, n)
	t.Cleanup(func() { deleteQueue(t, c, queue) })
	leader, err := c.AwaitLeader(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s leads %s; stopping it", leader.Short, queue)
	killed := time.Now()
	if err := c.Kill(ctx, leader.Short); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { revive(t, c, leader) }) // registered after the delete: runs first
	if st := c.State(ctx, leader); st != cluster.Stopped {
		t.Fatalf("after Kill, %s is %s, want %s", leader.Short, st, cluster.Stopped)
	}
	other := otherNode(c, leader)
	t.Logf("stop_app on %s took %v", leader.Short, time.Since(killed).Round(10*time.Millisecond))
	got := consumeAll(ctx, t, other.URL(), queue, n)
	t.Logf("%d of %d consumed from %s %v after the stop began", len(got), n, other.Short, time.Since(killed).Round(10*time.Millisecond))
	if len(got) != n {
		t.Fatalf("consumed %d distinct messages from %s after its leader stopped, want %d", len(got), other.Short, n)
	}
	newLeader, err := c.AwaitLeader(ctx, queue)
	if err != nil || newLeader.Name == leader.Name {
		t.Fatalf("leader after the stop = %v, %v; want a node other than %s", newLeader.Short, err, leader.Short)
	}
	t.Logf("%s leads now; reviving %s", newLeader.Short, leader.Short)
	if err := c.Revive(ctx, leader.Short); err != nil {
		t.Fatal(err)
	}
	if st := c.State(ctx, leader); st != cluster.Running {
		t.Fatalf("after Revive, %s is %s, want %s", leader.Short, st, cluster.Running)
	}
}

// revive starts n again if it is not running: the next test on the
// shared cluster must find every node running.
func revive(t *testing.T, c *cluster.Cluster, n cluster.NodeSpec) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if c.State(ctx, n) == cluster.Running {
		return
	}
	if err := c.Revive(ctx, n.Short); err != nil {
		t.Errorf("reviving %s: %v", n.Short, err)
	}
}

// deleteQueue deletes the test's queue from the cluster.
func deleteQueue(t *testing.T, c *cluster.Cluster, queue string) {
	conn, err := amqp.Dial(c.URLs()[0])
	if err != nil {
		t.Errorf("deleting %s: %v", queue, err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err == nil {
		_, err = ch.QueueDelete(queue,
			false, // ifUnused
			false, // ifEmpty
			false) // noWait
	}
	if err != nil {
		t.Errorf("deleting %s: %v", queue, err)
	}
}

// publishQuorum declares queue as a quorum queue on url and publishes n
// persistent messages ("0".."n-1"), each confirmed.
func publishQuorum(ctx context.Context, t *testing.T, url, queue string, n int) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	_, err = ch.QueueDeclare(queue,
		true,  // durable: quorum queues are always durable
		false, // autoDelete
		false, // exclusive
		false, // noWait
		amqp.Table{"x-queue-type": "quorum"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue,
			false, // mandatory
			false, // immediate
			amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte(strconv.Itoa(i))})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("message %d not confirmed: ack=%v, %v", i, ok, err)
		}
	}
}

// consumeAll consumes and acks from queue on url until it has n distinct
// bodies or a minute passes. While no new leader is elected, basic.consume
// fails; it tries again.
func consumeAll(ctx context.Context, t *testing.T, url, queue string, n int) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	got := map[string]bool{}
	for len(got) < n && ctx.Err() == nil {
		if err := consumeSome(ctx, url, queue, n, got); err != nil {
			t.Logf("consuming from %s: %v; trying again", url, err)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return got
}

func consumeSome(ctx context.Context, url, queue string, n int, got map[string]bool) error {
	conn, err := amqp.Dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(10, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, queue, "",
		false, // autoAck
		false, // exclusive
		false, // noLocal
		false, // noWait
		nil)
	if err != nil {
		return err
	}
	for len(got) < n {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return errors.New("delivery channel closed")
			}
			got[string(d.Body)] = true
			if err := d.Ack(false); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// otherNode is the first node of c that is not n.
func otherNode(c *cluster.Cluster, n cluster.NodeSpec) cluster.NodeSpec {
	for _, o := range c.Nodes {
		if o.Name != n.Name {
			return o
		}
	}
	return n
}

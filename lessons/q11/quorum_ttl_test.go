package q11

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestPerMessageTTLHeadOfLineByQueueType measures on the real broker what
// lesson 11's strategy (b) claims for each queue type: a message with a
// short per-message TTL published behind one with a long TTL comes out of
// the delay queue only after the long one. It declares its own two queues
// under a private name and deletes them.
func TestPerMessageTTLHeadOfLineByQueueType(t *testing.T) {
	for _, line := range []string{"3.10", "4.3"} {
		for _, queueType := range []string{"classic", "quorum"} {
			t.Run(line+"/"+queueType, func(t *testing.T) {
				url, version := rabbittest.NeedVersion(t, line)
				order, shortAfter := expireLongThenShort(t, url, queueType)
				t.Logf("RabbitMQ %s, %s queue: out in order %v, the 100 ms message after %v", version, queueType, order, shortAfter)
				assert.Equal(t, []string{"long", "short"}, order, "expiry happens at the head only")
				assert.GreaterOrEqual(t, shortAfter, 1400*time.Millisecond, "the short TTL waited for the long one")
			})
		}
	}
}

// expireLongThenShort publishes "long" (TTL 1.5 s), then "short" (TTL
// 100 ms), into a delay queue of queueType that dead-letters into a target
// queue, and returns the order they reach the target and how long after
// its publish "short" arrived.
func expireLongThenShort(t *testing.T, url, queueType string) ([]string, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	prefix := fmt.Sprintf("qlab-test-q11-ttl-%s-%08x", queueType, rand.Uint32())
	delay, target := prefix+".delay", prefix+".target"
	t.Cleanup(func() { deleteQueues(t, url, delay, target) })
	// durable: RabbitMQ 4.3 refuses a transient queue that is not exclusive.
	_, err = ch.QueueDeclare(target, true /*durable*/, false /*autoDelete*/, false /*exclusive*/, false /*noWait*/, nil)
	require.NoError(t, err)
	_, err = ch.QueueDeclare(delay, true /*durable: quorum queues must be*/, false, false, false, amqp.Table{
		"x-queue-type":              queueType,
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": target,
	})
	require.NoError(t, err)
	deliveries, err := ch.Consume(target, "", true /*autoAck*/, false, false, false, nil)
	require.NoError(t, err)

	publish := func(id string, ttl time.Duration) time.Time {
		sent := time.Now()
		require.NoError(t, ch.PublishWithContext(ctx, "", delay, false /*mandatory*/, false /*immediate*/, amqp.Publishing{
			MessageId: id, Body: []byte(id), Expiration: fmt.Sprint(ttl.Milliseconds()),
		}))
		return sent
	}
	publish("long", 1500*time.Millisecond)
	shortSent := publish("short", 100*time.Millisecond)
	var order []string
	var shortAfter time.Duration
	for len(order) < 2 {
		select {
		case d := <-deliveries:
			order = append(order, d.MessageId)
			if d.MessageId == "short" {
				shortAfter = time.Since(shortSent)
			}
		case <-ctx.Done():
			t.Fatalf("only %v came out of the %s delay queue", order, queueType)
		}
	}
	return order, shortAfter
}

// deleteQueues deletes the queues this test declared, on a fresh channel.
func deleteQueues(t *testing.T, url string, names ...string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Errorf("cleaning up: %v", err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("cleaning up: %v", err)
		return
	}
	for _, n := range names {
		if _, err := ch.QueueDelete(n, false /*ifUnused*/, false /*ifEmpty*/, false /*noWait*/); err != nil {
			t.Errorf("deleting %s: %v", n, err)
		}
	}
}

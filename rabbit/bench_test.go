package rabbit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// Both throughput benchmarks use the same settings, so the lab's path can
// be compared with a bare amqp091-go loop: persistent JSON messages,
// publisher confirms with up to confirmWindow unconfirmed publishes in
// flight, then a manual-ack consumer with prefetch benchPrefetch acking
// each delivery. b.N is the number of messages; run with e.g.
// -benchtime 20000x. Reported: publish and consume rates in msg/s.
const (
	confirmWindow = 256
	benchPrefetch = 256
)

func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkRawAMQP is the yardstick: amqp091-go with nothing of the lab.
func BenchmarkRawAMQP(b *testing.B) {
	url := rabbittest.NeedBroker(b)
	ctx := benchCtx(b)
	conn, err := amqp.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	queue := rabbit.RunNames().Of("bench.raw")
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	defer ch.QueueDelete(queue, false, false, false)
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()

	start := time.Now()
	inFlight := make([]*amqp.DeferredConfirmation, 0, confirmWindow)
	for i := range b.N {
		task := strconv.Itoa(i)
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, amqp.Publishing{
			ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: task,
			Body: []byte(`{"task":"` + task + `"}`),
		})
		if err != nil {
			b.Fatal(err)
		}
		inFlight = append(inFlight, dc)
		if len(inFlight) == confirmWindow || i == b.N-1 {
			for _, dc := range inFlight {
				if ok, err := dc.WaitContext(ctx); err != nil || !ok {
					b.Fatalf("confirm: ok=%v err=%v", ok, err)
				}
			}
			inFlight = inFlight[:0]
		}
	}
	published := time.Since(start)

	cch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := cch.Qos(benchPrefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	deliveries, err := cch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		d := <-deliveries
		if err := d.Ack(false); err != nil {
			b.Fatal(err)
		}
	}
	consumed := time.Since(start)
	b.StopTimer()
	report(b, published, consumed)
}

// BenchmarkPublishConsume is the same loop through the lab's Publisher and
// Consumer.
func BenchmarkPublishConsume(b *testing.B) {
	s := rabbittest.Session(b, 1)
	ctx := benchCtx(b)
	if err := s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "bench.lab", Role: flow.Work}}}); err != nil {
		b.Fatal(err)
	}
	pub, err := s.Publisher(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	b.ResetTimer()

	start := time.Now()
	inFlight := make([]*amqp.DeferredConfirmation, 0, confirmWindow)
	for i := range b.N {
		dc, err := pub.PublishAsync(ctx, "bench.lab", strconv.Itoa(i), nil)
		if err != nil {
			b.Fatal(err)
		}
		inFlight = append(inFlight, dc)
		if len(inFlight) == confirmWindow || i == b.N-1 {
			for _, dc := range inFlight {
				if err := rabbit.WaitConfirm(ctx, dc); err != nil {
					b.Fatal(err)
				}
			}
			inFlight = inFlight[:0]
		}
	}
	published := time.Since(start)

	done := make(chan struct{})
	acked := 0
	start = time.Now()
	c, err := s.Consume(ctx, rabbit.ConsumerOptions{Queue: "bench.lab", Actor: "bench", Prefetch: benchPrefetch}, func(_ context.Context, d *rabbit.Delivery) {
		if err := d.Ack(); err != nil {
			b.Error(err)
		}
		if acked++; acked == b.N {
			close(done)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("consumed %d of %d", acked, b.N)
	}
	consumed := time.Since(start)
	b.StopTimer()
	c.Stop()
	report(b, published, consumed)
}

func report(b *testing.B, published, consumed time.Duration) {
	b.ReportMetric(float64(b.N)/published.Seconds(), "pub-msg/s")
	b.ReportMetric(float64(b.N)/consumed.Seconds(), "con-msg/s")
	b.ReportMetric(0, "ns/op") // the rates above are the figures that matter
}

// BenchmarkWaitQueueDelay measures how late a TTL wait queue delivers
// (publish → wait queue → TTL → dead-letter → consumer, minus the TTL):
// the delay error of every retry in the RabbitMQ lessons. b.N messages.
func BenchmarkWaitQueueDelay(b *testing.B) {
	s := rabbittest.Session(b, 1)
	stats, err := rabbit.MeasureWaitDelay(benchCtx(b), s, 100*time.Millisecond, max(b.N, 20), 2*time.Millisecond)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(stats.P50.Microseconds())/1000, "p50-late-ms")
	b.ReportMetric(float64(stats.P99.Microseconds())/1000, "p99-late-ms")
	b.ReportMetric(0, "ns/op")
}

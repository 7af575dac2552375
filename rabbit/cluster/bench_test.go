package cluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/rabbit/cluster/clustertest"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }

// BenchmarkConfirmedPublish measures seed 003's trade-off on one cluster:
// a persistent publish to a classic queue and to a quorum queue (three
// replicas), each waiting for its confirm before the next, from a client
// on n1 to a queue declared on n1. It reports the p50 and p99 of a
// publish's confirm round trip beside ns/op.
//
//	go test -run '^$' -bench ConfirmedPublish -benchtime 2000x ./rabbit/cluster
func BenchmarkConfirmedPublish(b *testing.B) {
	c := clustertest.Get(b)
	for _, kind := range []string{"classic", "quorum"} {
		b.Run(kind, func(b *testing.B) {
			conn, err := amqp.Dial(c.URLs()[0])
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			ch, err := conn.Channel()
			if err != nil {
				b.Fatal(err)
			}
			queue := fmt.Sprintf("qlabtest.bench.%s.%04x", kind, rand.IntN(1<<16))
			_, err = ch.QueueDeclare(queue,
				true,  // durable
				false, // autoDelete
				false, // exclusive
				false, // noWait
				amqp.Table{"x-queue-type": kind})
			if err != nil {
				b.Fatal(err)
			}
			defer ch.QueueDelete(queue, false, false, false)
			if err := ch.Confirm(false); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			took := make([]time.Duration, 0, b.N)
			body := make([]byte, 256)
			b.ResetTimer()
			for range b.N {
				begin := time.Now()
				dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue,
					false, // mandatory
					false, // immediate
					amqp.Publishing{DeliveryMode: amqp.Persistent, Body: body})
				if err != nil {
					b.Fatal(err)
				}
				if ok, err := dc.WaitContext(ctx); !ok || err != nil {
					b.Fatalf("not confirmed: ack=%v, %v", ok, err)
				}
				took = append(took, time.Since(begin))
			}
			b.StopTimer()
			slices.Sort(took)
			ms := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))]) / 1e6 }
			b.ReportMetric(ms(0.5), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}

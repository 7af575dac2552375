package q17

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/seeds/notify"
)

// The benchmarks put the lesson's confirm strategies and prefetch settings
// beside a bare amqp091-go loop doing the same, so one run compares them:
//
//	go test -run '^$' -bench . -benchtime 2000x ./lessons/q17
//
// b.N is the number of messages; the figure is msg/s (ns/op is zeroed).
// Every message is a persistent email job to a durable queue of the run's own.

func benchQueue(b *testing.B) (*rabbit.Session, string) {
	s := rabbittest.Session(b, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: notify.EmailQueue, Role: flow.Work}}}); err != nil {
		b.Fatal(err)
	}
	return s, s.Names.Of(notify.EmailQueue)
}

func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	b.Cleanup(cancel)
	return ctx
}

func reportRate(b *testing.B, d time.Duration) {
	b.ReportMetric(float64(b.N)/d.Seconds(), "msg/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPublish: each confirm strategy (publishJobs, the lesson's
// loop) until the last confirm, and the bare loop: ch.PublishWithContext
// with no confirm mode and nothing else, until it returns.
func BenchmarkPublish(b *testing.B) {
	for _, st := range confirmStrategies {
		b.Run(strconv.Itoa(st.window)+"-"+st.name, func(b *testing.B) {
			s, queue := benchQueue(b)
			ctx := benchCtx(b)
			ch, err := publishChannel(s.Connection(), st)
			if err != nil {
				b.Fatal(err)
			}
			defer ch.Close()
			b.ResetTimer()
			run, err := publishJobs(ctx, ch, queue, s.Names.Run, "b.", st, b.N, 0, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if st.window == 0 {
				run.elapsed = b.Elapsed()
			}
			reportRate(b, run.elapsed)
		})
	}
	b.Run("bare-amqp091-loop", func(b *testing.B) {
		s, queue := benchQueue(b)
		ctx := benchCtx(b)
		ch, err := s.Connection().Channel()
		if err != nil {
			b.Fatal(err)
		}
		defer ch.Close()
		body := notify.NewJob("bench", time.Now()).Encode()
		b.ResetTimer()
		for i := range b.N {
			msg := amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: strconv.Itoa(i), Body: body}
			if err := ch.PublishWithContext(ctx, "", queue, false, false, msg); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		reportRate(b, b.Elapsed())
	})
}

// BenchmarkConsume: b.N jobs waiting in the queue (published untimed),
// drained by one consumer at each prefetch with a handler that does no
// work: the lesson's worker (arrival counting, events), and the bare
// loop (range over the deliveries, Ack).
func BenchmarkConsume(b *testing.B) {
	for _, p := range prefetchSettings {
		name := "prefetch-" + strconv.Itoa(p)
		b.Run(name+"/lesson-worker", func(b *testing.B) {
			s, queue := benchQueue(b)
			ctx := benchCtx(b)
			fill(b, ctx, s, queue)
			env := &lesson.Env{Stream: lab.NewStream("q17", lab.Rabbit, lab.NewClock(1))}
			var acked atomic.Int64
			all := make(chan struct{})
			w := &worker{name: "Bench-Worker", prefetch: p, concurrency: 1}
			b.ResetTimer()
			begin := make(chan struct{})
			close(begin) // the jobs are in (fill)
			stop, err := w.consume(ctx, env, s, begin, func() {
				if acked.Add(1) == int64(b.N) {
					close(all)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			<-all
			b.StopTimer()
			stop()
			reportRate(b, b.Elapsed())
		})
		b.Run(name+"/bare-amqp091-loop", func(b *testing.B) {
			s, queue := benchQueue(b)
			ctx := benchCtx(b)
			fill(b, ctx, s, queue)
			ch, err := s.Connection().Channel()
			if err != nil {
				b.Fatal(err)
			}
			defer ch.Close()
			b.ResetTimer()
			if err := ch.Qos(p, 0, false); err != nil {
				b.Fatal(err)
			}
			deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				if err := (<-deliveries).Ack(false); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportRate(b, b.Elapsed())
		})
	}
}

// fill publishes b.N jobs to queue, confirmed in windows of 256.
func fill(b *testing.B, ctx context.Context, s *rabbit.Session, queue string) {
	st := confirmStrategy{"fill", 256}
	ch, err := publishChannel(s.Connection(), st)
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close()
	if _, err := publishJobs(ctx, ch, queue, s.Names.Run, "b.", st, b.N, 0, nil); err != nil {
		b.Fatal(err)
	}
}

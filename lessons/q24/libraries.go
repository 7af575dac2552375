package q24

import (
	"fmt"

	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/render"
)

// What the seeds' libraries do with part (e)'s reject-and-requeue loop.
// The lab's consumer above costs 50 ms a delivery by the lab's own choice
// (stepTime); these are the libraries', measured with Node 20.20.2 and
// amqplib 2.3.1 against this project's brokers (scripts/amqplib;
// lessons/q24/README.md), or quoted from their source. The machine had two
// cores and a load average near 40, so the rates spread widely: the
// tables give the range of four runs.
const (
	// BroadwayRabbitMQVersion and BroadwayVersion are the releases quoted.
	BroadwayRabbitMQVersion = versions.BroadwayRabbitMQ
	BroadwayVersion         = versions.Broadway
	// AmqplibVersion is the amqplib release measured.
	AmqplibVersion = versions.Amqplib
)

// libraryLoop is one measured way a library drives the loop.
type libraryLoop struct {
	consumer, rate, loops string
}

// libraryLoops are the measured rates, in deliveries a second of real
// time, on RabbitMQ 3.10.8 and 4.3.6.
var libraryLoops = []libraryLoop{
	{consumer: "amqplib " + AmqplibVersion + ", one message at a time (prefetch 1)",
		rate:  "564-1,642/s on 3.10.8, 188-1,164/s on 4.3.6 (4 runs each)",
		loops: "the message at the head, alone: requeued at the head, it comes back first"},
	{consumer: "Broadway-shaped on amqplib: prefetch 50, 1 s batch",
		rate:  "bad JSON 2,272/s on 3.10.8, 458/s on 4.3.6; the user 1.0/s on both",
		loops: "the bad JSON, in the processor; the user once per batch timeout"},
}

// librariesTable says how the seed's own libraries drive part (e)'s loop,
// beside the lab's consumer of the table before it.
func librariesTable() render.Table {
	t := render.Table{
		Title:  "The seeds' libraries on part (e)'s loop (measured with Node, real time)",
		Header: []string{"consumer", "deliveries/s", "which message loops"},
		Notes: []string{
			"The lab's consumer above is the lab's: 50 ms a delivery is its choice, so " +
				"its loop runs at 10-20/s. A library adds no such cost: one message " +
				"rejected with requeue comes back as fast as the broker redelivers it.",
			fmt.Sprintf("Seed 004's DLQConsumer is a Broadway pipeline. broadway_rabbitmq "+
				"%s: on_failure defaults to :reject_and_requeue, \"an infinite loop of "+
				"retries\" for an unprocessable message (its docs), and prefetch_count to "+
				"50. Broadway %s acks a failed message in the processor stage "+
				"(processor_stage.ex), before any batcher.", BroadwayRabbitMQVersion,
				BroadwayVersion),
			"So under Broadway the shape is the other way round from the lab's consumer: " +
				"the bad JSON fails in the processor and spins at the broker's speed, " +
				"never batched, while the user waits in a batcher for its 1 s timeout " +
				"(a batch of 1000 never fills behind prefetch 50, Q23) and goes round " +
				"once a second.",
		},
	}
	for _, l := range libraryLoops {
		t.Rows = append(t.Rows, []string{l.consumer, l.rate, l.loops})
	}
	return t
}

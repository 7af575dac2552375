package metrictypes

import "github.com/queuelab/qlab/metrics"

// The seed's metric names (seed 003), as package metrics serves them.
const (
	ConsumeDuration = metrics.ConsumeDuration // seconds an attempt took
	AckTotal        = metrics.AckTotal        // attempts that succeeded
	NackTotal       = metrics.NackTotal       // attempts that failed
	Depth           = metrics.Depth           // messages in the queue now
)

// QueueLabel is the one label every series carries: the queue's name.
const QueueLabel = "queue"

// Buckets are the consume duration's histogram buckets, in seconds: 1 ms
// to 32 s.
var Buckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2, 4, 8, 16, 32}

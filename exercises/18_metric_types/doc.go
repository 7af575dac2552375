// Package metrictypes is exercise 18 (lesson Q22, metrics): the worker's
// metrics, each of the right type with the right labels. A duration is a
// histogram (Prometheus aggregates its buckets across workers and reads
// any percentile from them), a total is a counter (it only goes up, and
// rate() survives a restart's reset), a level is a gauge (it goes down as
// well as up). A label is a dimension someone filters by, with few values:
// the queue. A task id or a message body as a label makes one series per
// message, and a registry that grows without end.
//
// Edit metrics.go only. names.go holds the metric names and the label;
// check_test.go is the checker (`qlab ex check 18`): it runs two workers
// in memory through an outage, calls your methods on every attempt and
// every depth it reads, then scrapes the registry you were given on
// /metrics and parses the text format, as a Prometheus server does.
package metrictypes

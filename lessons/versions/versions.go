// Package versions holds what the lab measured on each RabbitMQ version
// where a lesson depends on the version: a lesson names the version it
// runs on, says what that version does, and what the other one did, with
// figures from real runs. The lessons' pages and docs/broker.md record
// the runs; the tests of package rabbit and of the lessons hold each
// version's behaviour on a broker of that version (rabbittest.NeedVersion).
package versions

import (
	"fmt"
	"strings"
)

// The versions the lab measured: the project's broker, and the 4.3 node
// scripts/rabbitmq.sh starts beside it.
const (
	Old = "3.10.8"
	New = "4.3.6"
)

// The seeds' libraries, at the releases the lab ran (amqplib, with Node
// 20.20.2: scripts/amqplib) or quoted from source (Broadway and
// broadway_rabbitmq): a lesson that says what the seed's library does
// names the release (lessons/q22/README.md to q24).
const (
	Amqplib          = "2.3.1"
	Broadway         = "1.3.0"
	BroadwayRabbitMQ = "0.8.2"
)

// Measured is one version's behaviour, as a run of the lab measured it.
type Measured struct {
	Version string // "3.10.8"
	Did     string // what it did, with the figure: "kept counting: 0 1 2 … 14"
}

// Fact is one behaviour a lesson depends on, measured on each version.
type Fact struct {
	What   string     // "an x-death a worker copies into its republished message"
	By     []Measured // one per version, oldest first
	Source string     // where RabbitMQ says so: docs, release notes, pull requests
}

// Line is the release line of version v: "3.10" of "3.10.8".
func Line(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// Note says, for a run on version running ("" for a run in memory), what
// each measured version did, the running one first and named as this
// broker. A version of another line was not measured by the lab: the
// note says so, and gives both measured versions.
func (f Fact) Note(running string) string {
	var this []string
	var others []string
	for _, m := range f.By {
		s := fmt.Sprintf("RabbitMQ %s %s", m.Version, m.Did)
		if running != "" && Line(m.Version) == Line(running) {
			this = append(this, strings.Replace(s, "RabbitMQ "+m.Version, "RabbitMQ "+m.Version+" (this broker)", 1))
			continue
		}
		others = append(others, s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", upper(f.What))
	if running != "" && len(this) == 0 {
		fmt.Fprintf(&b, "this broker, RabbitMQ %s, is a version the lab did not measure; ", running)
	}
	b.WriteString(strings.Join(append(this, others...), "; "))
	if f.Source != "" {
		b.WriteString(" (" + f.Source + ")")
	}
	b.WriteString(".")
	return b.String()
}

// On says what version running did, measured: its Did, or "" when the
// lab did not measure that line.
func (f Fact) On(running string) string {
	for _, m := range f.By {
		if Line(m.Version) == Line(running) {
			return m.Did
		}
	}
	return ""
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// The facts the lessons use, measured here on RabbitMQ 3.10.8 and 4.3.6
// (docs/broker.md, "Measured on two brokers").
var (
	// XDeathRepublished: Q13's run 2, Q14's and Q19's republished retries.
	XDeathRepublished = Fact{
		What: "an x-death header a worker copies into the message it republishes",
		By: []Measured{
			{Old, "reads it and keeps counting: Q13's rC read 0 1 2 … 14 expiries over 15 deliveries"},
			{New, "ignores it and starts a new count: rC read 0 1 1 … 1"},
		},
		Source: "x- headers belong to the broker: 4.0 no longer reads a client's x-death, " +
			"rabbitmq-server pull request #11339 and the 4.0.1 release notes",
	}
	// QuorumTTLHead: Q11 and Q14's quorum retry queue.
	QuorumTTLHead = Fact{
		What: "a per-message TTL in a quorum queue",
		By: []Measured{
			{Old, "expires a message only at the head: Q14's 30 s retries qB and qC came back 270 s late, behind a 5-minute one"},
			{New, "does the same: they came back 270.6 s and 270.2 s late"},
		},
		Source: "the TTL guide says quorum queues do not wait for the head; " +
			"rabbitmq-server issue #10617 reports that they do",
	}
	// QuorumReturns: Q19's fake delay and Q21's delivery limit.
	QuorumReturns = Fact{
		What: "what a quorum queue counts when a message comes back",
		By: []Measured{
			{Old, "counts every return: read with basic.get, x-delivery-count read 0 1 2 3 over " +
				"three basic.nacks, three basic.rejects or three closed channels, and no x-acquired-count"},
			{New, "counts failed deliveries only: after basic.reject or a closed channel " +
				"x-delivery-count read 1 2 3, after basic.nack it stayed unwritten; " +
				"x-acquired-count read 1 2 3 for all three"},
		},
		Source: "rabbitmq-server pull request #15387; the 4.3.0 release notes",
	}
	// DeliveryLimit: Q13's hot-loop guard and Q21's poison loop.
	DeliveryLimit = Fact{
		What: "a quorum queue declared without x-delivery-limit",
		By: []Measured{
			{Old, "has no limit: after 25 basic.rejects with requeue the message was still there"},
			{New, "has a limit of 20: the 21st delivery's basic.reject dropped it (no " +
				"dead-letter exchange), while 25 basic.nacks left it in place"},
		},
		Source: "the 4.0.1 release notes: a default limit of 20; the 4.3.0 release notes: unlimited returns",
	}
	// Metrics: Q22's counters and depth.
	Metrics = Fact{
		What: "the seed's metrics",
		By: []Measured{
			{Old, "read 10 nacks, 1 redelivery after the cut, a depth of 5 of 10 and a timestamp in whole seconds"},
			{New, "read the same: 10, 1, 5 of 10, whole seconds"},
		},
		Source: "the redelivered flag and a passive declare's ready count are AMQP 0-9-1's own; " +
			"a classic queue wrote no x-delivery-count on either version (Q19's requeued S1-S5), " +
			"a quorum queue's changed meaning in 4.3",
	}
)

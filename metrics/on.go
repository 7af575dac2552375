package metrics

import (
	"time"

	"github.com/queuelab/qlab/lab"
)

// Set is every Metrics a run feeds: what a backend reports (a publish's
// duration, a queue's depth, the connection) goes to each, so a lesson's
// own tap and a --metrics server say the same.
type Set []*Metrics

// On returns the Metrics among stream's sinks (Stream.Sinks): those the
// run was started with (qlab run --metrics) and those tapped since. It is
// empty when the run feeds none.
func On(stream *lab.Stream) Set {
	var set Set
	for _, s := range stream.Sinks() {
		if m, ok := s.(*Metrics); ok {
			set = append(set, m)
		}
	}
	return set
}

// ObservePublish is Metrics.ObservePublish on each.
func (set Set) ObservePublish(r Run, queue string, d time.Duration) {
	for _, m := range set {
		m.ObservePublish(r, queue, d)
	}
}

// SetDepth is Metrics.SetDepth on each.
func (set Set) SetDepth(r Run, queue string, n int) {
	for _, m := range set {
		m.SetDepth(r, queue, n)
	}
}

// SetConsumers is Metrics.SetConsumers on each.
func (set Set) SetConsumers(r Run, queue string, n int) {
	for _, m := range set {
		m.SetConsumers(r, queue, n)
	}
}

// SetConnected is Metrics.SetConnected on each.
func (set Set) SetConnected(r Run, up bool) {
	for _, m := range set {
		m.SetConnected(r, up)
	}
}

// ChannelOpened is Metrics.ChannelOpened on each.
func (set Set) ChannelOpened(r Run) {
	for _, m := range set {
		m.ChannelOpened(r)
	}
}

// ChannelClosed is Metrics.ChannelClosed on each.
func (set Set) ChannelClosed(r Run) {
	for _, m := range set {
		m.ChannelClosed(r)
	}
}

package render

import "github.com/queuelab/qlab/lab"

// Canonical returns events in an order that is the same on every run of a
// deterministic (synctest) lesson, for golden transcripts.
//
// Events at different lesson times keep their time order. Within one
// instant, goroutines that woke together may have emitted in any order, so
// Canonical re-merges them: each actor's events stay in its own order (one
// actor is one goroutine), each task's events stay in causal order (a task
// is handed between goroutines), and where neither constrains, the
// alphabetically first actor goes first. This needs one goroutine per actor
// name; events a task-less actor emits because of a task should carry that
// task.
func Canonical(events []lab.Event) []lab.Event {
	out := make([]lab.Event, 0, len(events))
	for start := 0; start < len(events); {
		end := start
		for end < len(events) && events[end].TMs == events[start].TMs {
			end++
		}
		out = append(out, mergeInstant(events[start:end])...)
		start = end
	}
	return out
}

// mergeInstant orders the events of one instant (given in emission order).
func mergeInstant(group []lab.Event) []lab.Event {
	if len(group) < 2 {
		return group
	}
	done := make([]bool, len(group))
	out := make([]lab.Event, 0, len(group))
	for len(out) < len(group) {
		best := -1
		for i, e := range group {
			if done[i] || !ready(group, done, i) {
				continue
			}
			if best < 0 || e.Actor < group[best].Actor {
				best = i
			}
		}
		done[best] = true
		out = append(out, group[best])
	}
	return out
}

// ready reports whether every earlier event sharing an actor or a task
// with group[i] is already placed. A phase marker is a barrier: it waits
// for every earlier event, and no later one passes it. The earliest pending event is always
// ready, so mergeInstant always progresses.
func ready(group []lab.Event, done []bool, i int) bool {
	e := group[i]
	for j := 0; j < i; j++ {
		if done[j] {
			continue
		}
		p := group[j]
		if p.Actor == e.Actor || (e.Task != "" && p.Task == e.Task) || p.Kind == lab.Phase || e.Kind == lab.Phase {
			return false
		}
	}
	return true
}

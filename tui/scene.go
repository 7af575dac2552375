package tui

import (
	"slices"

	"github.com/queuelab/qlab/lab"
)

// moveFrames is how many frames a token takes to travel along an arrow:
// long enough to read as a movement, short enough to keep up with a lesson.
const moveFrames = 10

// Node is one box of the lesson view: a queue, named as events name it.
type Node struct {
	Name string
	// Delays are the lesson-time delays (ms) of the scheduled hops into this
	// queue, in order of first appearance: a wait queue's TTL.
	Delays []int64
}

// status is where a token stands in its lifecycle.
type status int

const (
	waiting status = iota // queued, no worker on it
	working               // an attempt is running
	failing               // its last attempt failed; the worker decides what next
	delayed               // scheduled: it reaches its queue at token.due
	done                  // processed
	dead                  // parked in a dead-letter queue (drawn in that box)
	gone                  // dropped or lost: out of every box
)

// token is one task as the view draws it.
type token struct {
	id       string
	queue    string // the box it is in, or travelling to
	status   status
	attempts int
	due      int64 // lesson ms a delayed token arrives
	rejected bool  // the breaker fast-failed its last call
	// An active move: from queue `from`, started at frame `moveAt`.
	from   string
	moveAt int
	moving bool
}

// mover is one token in flight between two boxes. A ghost (an alert
// mail about a task) leaves the token where it is.
type mover struct {
	tok      *token
	label    string
	from, to string
	start    int
	ghost    bool
	tone     tone
}

// tone is the colour class a token or text is drawn in.
type tone int

const (
	plain tone = iota
	good
	warn
	bad
	faint
)

// breakerLight is what the breaker pane shows, derived from breaker,
// rejected, succeeded and failed events.
type breakerLight struct {
	seen     bool
	state    string // closed, open, half_open
	calls    int    // attempts finished since the last state change
	fails    int    // of which failed
	rejected int    // calls the open breaker fast-failed, in the whole run
	// The counts when the state last changed: what tripped it.
	prevCalls, prevFails int
	recent               []string
}

// scene is the lesson view's state, a pure function of the events applied
// so far (and of the frame they were applied at, for animations).
type scene struct {
	nodes    []Node
	index    map[string]int
	tokens   map[string]*token
	members  map[string][]*token // per queue, in arrival order
	movers   []*mover
	doneIDs  []string
	goneIDs  []string // dropped and lost, in order
	alerts   []string
	breaker  breakerLight
	attempts int
	dead     int
	dropped  int
	lost     int
	lastMs   int64 // lesson time of the latest event
	finished bool
}

func newScene(explicit []Node) *scene {
	s := &scene{index: map[string]int{}, tokens: map[string]*token{}, members: map[string][]*token{}}
	for _, n := range explicit {
		s.node(n.Name)
		s.nodes[s.index[n.Name]].Delays = slices.Clone(n.Delays)
	}
	return s
}

// node returns the index of queue name, adding it to the topology in order
// of first appearance.
func (s *scene) node(name string) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	s.index[name] = len(s.nodes)
	s.nodes = append(s.nodes, Node{Name: name})
	return len(s.nodes) - 1
}

// observe grows the topology from e: its queue, then its destination.
func (s *scene) observe(e lab.Event) {
	if e.Queue != "" {
		s.node(e.Queue)
	}
	if e.To != "" {
		s.node(e.To)
	}
}

// apply folds event e, received at animation frame frame, into the scene.
func (s *scene) apply(e lab.Event, frame int) {
	s.observe(e)
	s.lastMs = max(s.lastMs, e.TMs)
	t := s.tokens[e.Task]
	switch e.Kind {
	case lab.Enqueued:
		t = s.create(e.Task)
		s.place(t, e.Queue)
		t.status = waiting
	case lab.Breaker:
		s.breaker.seen = true
		s.breaker.state = e.Note
		s.breaker.prevCalls, s.breaker.prevFails = s.breaker.calls, s.breaker.fails
		s.breaker.calls, s.breaker.fails = 0, 0
		return
	case lab.Summary:
		s.finished = true
		if t != nil {
			s.settle(t, e.Fate)
		}
		return
	}
	if t == nil {
		if e.Task == "" || e.Kind == lab.Alerted {
			s.applyTaskless(e)
			return
		}
		t = s.create(e.Task) // a lesson that never enqueued it: show it anyway
		s.place(t, e.Queue)
	}
	s.applyToToken(t, e, frame)
}

// applyTaskless handles events about no known task: an alert about a task
// the view never saw still counts as an alert.
func (s *scene) applyTaskless(e lab.Event) {
	if e.Kind == lab.Alerted && e.Task != "" {
		s.alerts = append(s.alerts, e.Task)
	}
}

func (s *scene) applyToToken(t *token, e lab.Event, frame int) {
	switch e.Kind {
	case lab.Started:
		s.attempts++
		t.attempts = max(t.attempts, e.Attempt)
		t.rejected = false
		if t.queue != "" && e.Queue != "" && t.queue != e.Queue {
			// It got here without an event of its own (a broker's TTL
			// expiry dead-lettering it back): show the trip anyway.
			s.travel(t, t.queue, e.Queue, frame, warn)
		}
		s.place(t, e.Queue)
		t.status = working
	case lab.Succeeded:
		s.countCall(false)
		s.finish(t)
		t.status = done
		s.doneIDs = append(s.doneIDs, t.id)
	case lab.Failed:
		s.countCall(true)
		t.status = failing
	case lab.Moved:
		to := e.To
		if to == "" {
			to = e.Queue
		}
		s.travel(t, e.Queue, to, frame, warn)
		t.status = waiting
	case lab.Redelivered:
		s.travel(t, t.queue, e.Queue, frame, warn)
		t.status = waiting
	case lab.Scheduled:
		box := waitBox(e, t)
		s.travel(t, t.queue, box, frame, warn)
		s.noteDelay(box, e.DelayMs)
		t.status = delayed
		t.due = e.TMs + e.DelayMs
	case lab.DeadLettered:
		s.travel(t, e.Queue, e.To, frame, bad)
		t.status = dead
		s.dead++
	case lab.Dropped:
		s.finish(t)
		t.status = gone
		s.dropped++
		s.goneIDs = append(s.goneIDs, t.id)
	case lab.Lost:
		s.finish(t)
		t.status = gone
		s.lost++
		s.goneIDs = append(s.goneIDs, t.id)
	case lab.Rejected:
		t.rejected = true
		s.breaker.seen = true
		s.breaker.rejected++
		s.breaker.recent = appendRecent(s.breaker.recent, t.id, 8)
	case lab.Alerted:
		s.alerts = append(s.alerts, t.id)
		s.movers = append(s.movers, &mover{tok: t, label: t.id, from: t.queue, to: alertNode, start: frame, ghost: true, tone: warn})
	}
}

// alertNode names the pseudo-box alerts travel to. It cannot clash with a
// queue name: events never carry a leading NUL.
const alertNode = "\x00alert"

// countCall feeds the breaker's failure counts.
func (s *scene) countCall(failed bool) {
	s.breaker.calls++
	if failed {
		s.breaker.fails++
	}
}

func appendRecent(list []string, id string, n int) []string {
	list = append(list, id)
	if len(list) > n {
		list = list[len(list)-n:]
	}
	return list
}

func (s *scene) create(id string) *token {
	if t, ok := s.tokens[id]; ok {
		return t
	}
	t := &token{id: id}
	s.tokens[id] = t
	return t
}

// place puts t in the box of queue q (no animation).
func (s *scene) place(t *token, q string) {
	if q == "" || (t.queue == q && t.status != done && t.status != gone) {
		return
	}
	s.finish(t)
	t.queue = q
	s.members[q] = append(s.members[q], t)
}

// travel moves t from queue from to queue to, animated from frame on. A
// token going back to the queue it is in still moves: to the tail.
func (s *scene) travel(t *token, from, to string, frame int, tn tone) {
	if from == "" {
		from = t.queue
	}
	s.finish(t)
	t.queue = to
	s.members[to] = append(s.members[to], t)
	t.from, t.moveAt, t.moving = from, frame, true
	s.movers = append(s.movers, &mover{tok: t, label: t.id, from: from, to: to, start: frame, tone: tn})
}

// waitBox is where a scheduled task counts down. On a broker the worker
// rejects it into a wait queue that the event names as its queue while the
// task sits elsewhere: it waits there, in plain sight, and its next attempt
// shows the broker's hop onward. In memory the event's queue is the one the
// task failed in and the wait is a timer: it counts down on its way to To.
func waitBox(e lab.Event, t *token) string {
	if e.Queue != "" && t.queue != "" && e.Queue != t.queue {
		return e.Queue
	}
	return e.To
}

// noteDelay labels box with a delay its tasks wait there (a TTL), once.
func (s *scene) noteDelay(box string, ms int64) {
	i := s.node(box)
	if ms > 0 && !slices.Contains(s.nodes[i].Delays, ms) {
		s.nodes[i].Delays = append(s.nodes[i].Delays, ms)
	}
}

// finish takes t out of the box it is in.
func (s *scene) finish(t *token) {
	if t.queue == "" {
		return
	}
	list := s.members[t.queue]
	if i := slices.Index(list, t); i >= 0 { // FIFO: almost always near the front
		s.members[t.queue] = slices.Delete(list, i, i+1)
	}
	t.queue = ""
}

// settle applies a summary's fate where the events before it did not
// already say so: a task the run lost without a lost event of its own.
func (s *scene) settle(t *token, f lab.Fate) {
	if f == lab.FateLost && t.status != gone {
		s.finish(t)
		t.status = gone
		s.lost++
		s.goneIDs = append(s.goneIDs, t.id)
	}
}

// inTransit reports whether t is still travelling at frame.
func (t *token) inTransit(frame int) bool {
	return t.moving && frame < t.moveAt+moveFrames
}

// prune forgets finished animations; it returns whether any is still running.
func (s *scene) prune(frame int) bool {
	live := s.movers[:0]
	for _, m := range s.movers {
		if frame < m.start+moveFrames {
			live = append(live, m)
		} else if !m.ghost && m.tok.moveAt == m.start {
			m.tok.moving = false
		}
	}
	clear(s.movers[len(live):])
	s.movers = live
	return len(live) > 0
}

// counting reports whether a delayed token still shows a countdown at
// lesson time nowMs.
func (s *scene) counting(nowMs int64) bool {
	for _, n := range s.nodes {
		if len(n.Delays) == 0 {
			continue
		}
		for _, t := range s.members[n.Name] {
			if t.status == delayed && t.due > nowMs {
				return true
			}
		}
	}
	return false
}

// pending is how many tasks have no final fate yet.
func (s *scene) pending() int {
	return len(s.tokens) - len(s.doneIDs) - s.dead - s.dropped - s.lost
}

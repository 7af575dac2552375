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
	waiting  status = iota // queued, no worker on it
	working                // an attempt is running
	failing                // its last attempt failed; the worker decides what next
	delayed                // scheduled: it reaches its queue at token.due
	done                   // processed
	dead                   // parked in a dead-letter queue (drawn in that box)
	received               // a dead-letter worker took it off its queue (drawn there)
	stranded               // in a queue nothing consumes (drawn there)
	gone                   // dropped, lost or refused: out of every box
)

// token is one task as the view draws it.
type token struct {
	id       string
	queue    string // the box it is in, or travelling to
	status   status
	fate     lab.Fate // as the ledger would say now; "" before it is counted
	attempts int
	due      int64     // lesson ms a delayed token arrives
	next     string    // where a delayed token goes at due ("" when an event will say)
	nextAt   lab.Place // where in next it lands
	rejected bool      // the breaker fast-failed its last call
	move     *mover    // its journey in progress, if any
}

// mover is one token in flight between two boxes. A ghost (an alert
// mail about a task) leaves the token where it is; a trail (a hop the
// broker made on its own) draws only the path, since the token is already
// where it went.
type mover struct {
	tok      *token
	label    string
	from, to string
	start    int
	ghost    bool
	trail    bool
	head     bool // back into the head of the box it left (see lanePath)
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

// recent keeps the latest distinct ids of a list, newest last, up to max.
type recent struct {
	ids []string
	max int
}

// add puts id last, once.
func (r *recent) add(id string) {
	r.remove(id)
	r.ids = append(r.ids, id)
	if len(r.ids) > r.max {
		r.ids = r.ids[len(r.ids)-r.max:]
	}
}

// remove takes id out, if it is there.
func (r *recent) remove(id string) {
	if i := slices.Index(r.ids, id); i >= 0 {
		r.ids = slices.Delete(r.ids, i, i+1)
	}
}

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
	recent               recent // the tasks of the latest rejected calls
}

// scene is the lesson view's state, a pure function of the events applied
// so far (and of the frame they were applied at, for animations).
type scene struct {
	nodes    []Node
	index    map[string]int
	tokens   map[string]*token
	members  map[string][]*token // per queue, head first (arrival order, but for a requeue at the head)
	movers   []*mover
	timed    []*token // delayed tokens that move on by themselves at due
	count    map[lab.Fate]int
	doneIDs  recent
	goneIDs  recent // dropped and lost
	alerts   []string
	mails    int // mails sent to customers (the work itself, not alerts)
	closes   int // channels the broker closed with an error
	breaker  breakerLight
	phase    string // the title of the run's current part
	phases   int
	attempts int
	lastMs   int64 // lesson time of the latest event
	finished bool
}

// recentIDs is how many ids the fates line and the breaker line keep.
const recentIDs = 8

func newScene(explicit []Node) *scene {
	s := &scene{index: map[string]int{}, tokens: map[string]*token{}, members: map[string][]*token{},
		count: map[lab.Fate]int{}, doneIDs: recent{max: recentIDs}, goneIDs: recent{max: recentIDs}}
	s.breaker.recent.max = recentIDs
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

// observe grows the topology from e: its queue, where it waits, then its
// destination.
func (s *scene) observe(e lab.Event) {
	if e.Queue != "" {
		s.node(e.Queue)
	}
	if e.Kind == lab.Scheduled {
		s.node(waitBox(e))
	}
	if e.To != "" {
		s.node(e.To)
	}
}

// apply folds event e, received at animation frame frame, into the scene.
// It reports whether the scene has a rule for e's kind; an event of a kind
// it does not know changes nothing (its log line still shows).
func (s *scene) apply(e lab.Event, frame int) bool {
	if !knownKind(e.Kind) {
		return false
	}
	s.observe(e)
	s.lastMs = max(s.lastMs, e.TMs)
	t := s.tokens[e.Task]
	switch e.Kind {
	case lab.Enqueued:
		t = s.create(e.Task)
		s.stopMove(t)
		s.place(t, e.Queue)
		t.status = waiting
		s.setFate(t, lab.FatePending)
		return true
	case lab.Breaker:
		s.breaker.seen = true
		s.breaker.state = e.Note
		s.breaker.prevCalls, s.breaker.prevFails = s.breaker.calls, s.breaker.fails
		s.breaker.calls, s.breaker.fails = 0, 0
		return true
	case lab.Phase:
		s.phase = e.Note
		s.phases++
		return true
	case lab.ChannelClosed: // no box changes: redelivered events move the tokens
		s.closes++
		return true
	case lab.Mailed: // the work's own effect, counted; the alert box is for alerts
		s.mails++
		return true
	case lab.Refused: // it never reached a queue: no box holds it
		t = s.create(e.Task)
		s.stopMove(t)
		s.finish(t)
		t.status = gone
		s.setFate(t, lab.FateRefused)
		return true
	case lab.Summary:
		s.finished = true
		if t != nil {
			s.settle(t, e.Fate)
		}
		return true
	}
	if t == nil {
		if e.Task == "" || e.Kind == lab.Alerted {
			s.applyTaskless(e)
			return true
		}
		t = s.create(e.Task) // a lesson that never enqueued it: show it anyway
		s.place(t, e.Queue)
		s.setFate(t, lab.FatePending)
	}
	s.applyToToken(t, e, frame)
	return true
}

// knownKind reports whether the scene has a rule for k: every kind of
// lab.Kinds (a test keeps the two lists equal).
func knownKind(k lab.Kind) bool {
	switch k {
	case lab.Enqueued, lab.Started, lab.Succeeded, lab.Failed, lab.Moved, lab.Scheduled,
		lab.DeadLettered, lab.Dropped, lab.Alerted, lab.Breaker, lab.Rejected, lab.Duplicate,
		lab.Redelivered, lab.Lost, lab.Summary, lab.Phase, lab.Received,
		lab.ChannelClosed, lab.Refused, lab.Stranded, lab.Mailed:
		return true
	}
	return false
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
		s.stopMove(t) // a worker has it: it is in the box, not on the lane
		if t.queue != "" && e.Queue != "" && t.queue != e.Queue {
			// It got here without an event of its own (a broker's TTL
			// expiry dead-lettering it back): show the hop it made.
			s.movers = append(s.movers, &mover{tok: t, from: t.queue, to: e.Queue, start: frame, trail: true, tone: faint})
		}
		s.place(t, e.Queue)
		t.status = working
	case lab.Succeeded, lab.Duplicate:
		if e.Kind == lab.Succeeded {
			s.countCall(false)
		}
		s.stopMove(t)
		s.finish(t)
		t.status = done
		s.setFate(t, lab.FateDone)
	case lab.Failed:
		s.countCall(true)
		t.status = failing
	case lab.Moved:
		to := e.To
		if to == "" {
			to = e.Queue
		}
		s.travelTo(t, e.Queue, to, e.Place, frame, warn)
		t.status = waiting
		s.setFate(t, lab.FatePending)
	case lab.Redelivered:
		if t.fate == lab.FateDead && t.queue == e.Queue {
			t.status = dead // back in the DLQ it is parked in, still dead (lab.Ledger)
			break
		}
		s.travel(t, t.queue, e.Queue, frame, warn)
		t.status = waiting
		s.setFate(t, lab.FatePending)
	case lab.Scheduled:
		s.schedule(t, e, frame)
	case lab.DeadLettered:
		s.travel(t, e.Queue, e.To, frame, bad)
		t.status = dead
		s.setFate(t, lab.FateDead)
	case lab.Received:
		s.stopMove(t)
		s.place(t, e.Queue)
		t.status = received
	case lab.Stranded:
		if e.To != "" && e.To != t.queue {
			s.travel(t, e.Queue, e.To, frame, bad)
		} else {
			s.place(t, e.Queue)
		}
		t.status = stranded
		s.setFate(t, lab.FateStranded)
	case lab.Dropped, lab.Lost:
		s.stopMove(t)
		s.finish(t)
		t.status = gone
		s.setFate(t, map[lab.Kind]lab.Fate{lab.Dropped: lab.FateDropped, lab.Lost: lab.FateLost}[e.Kind])
	case lab.Rejected:
		t.rejected = true
		s.breaker.seen = true
		s.breaker.rejected++
		s.breaker.recent.add(t.id)
	case lab.Alerted:
		s.alerts = append(s.alerts, t.id)
		s.movers = append(s.movers, &mover{tok: t, label: t.id, from: t.queue, to: alertNode, start: frame, ghost: true, tone: warn})
	}
}

// schedule puts t where it sits out its delay (see waitBox). It goes on
// to e.To by itself at its due time (advance), as the timer or the
// broker's TTL would send it, unless it already waits in e.To.
func (s *scene) schedule(t *token, e lab.Event, frame int) {
	box := waitBox(e)
	at := lab.AtTail // a wait queue or a timer: it lands in To later (advance)
	if box == e.To {
		at = e.Place // the queue itself holds it (a quorum queue's returns delay)
	}
	s.travelTo(t, t.queue, box, at, frame, warn)
	if e.Via != "" || box == timerNode {
		s.noteDelay(box, e.DelayMs) // a wait queue's TTL, or the timers' delays
	}
	t.status = delayed
	t.due = e.TMs + e.DelayMs
	t.next, t.nextAt = "", lab.AtTail
	if box != e.To && e.To != "" {
		t.next, t.nextAt = e.To, e.Place
		s.timed = append(s.timed, t)
	}
	s.setFate(t, lab.FatePending)
}

// advance moves on the delayed tokens whose time has come by lesson time
// nowMs: the timer fired, or the broker dead-lettered the expired message.
func (s *scene) advance(nowMs int64, frame int) {
	live := s.timed[:0]
	for _, t := range s.timed {
		switch {
		case t.status != delayed || t.next == "":
		case t.due <= nowMs:
			s.travelTo(t, t.queue, t.next, t.nextAt, frame, warn)
			t.status, t.next = waiting, ""
		default:
			live = append(live, t)
		}
	}
	clear(s.timed[len(live):])
	s.timed = live
}

// setFate moves t to fate f in the tally and the fates line.
func (s *scene) setFate(t *token, f lab.Fate) {
	if t.fate == f {
		return
	}
	if t.fate != "" {
		s.count[t.fate]--
	}
	s.count[f]++
	s.doneIDs.remove(t.id)
	s.goneIDs.remove(t.id)
	switch f {
	case lab.FateDone:
		s.doneIDs.add(t.id)
	case lab.FateDropped, lab.FateLost:
		s.goneIDs.add(t.id)
	}
	t.fate = f
}

// The pseudo-boxes: where alerts go, and where in-memory timers hold
// tasks. They cannot clash with a queue name: events never carry a NUL.
const (
	alertNode = "\x00alert"
	timerNode = "\x00timers"
)

// countCall feeds the breaker's failure counts.
func (s *scene) countCall(failed bool) {
	s.breaker.calls++
	if failed {
		s.breaker.fails++
	}
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

// travel moves t from queue from to the tail of queue to, animated from
// frame on. A token going back to the queue it is in still moves.
func (s *scene) travel(t *token, from, to string, frame int, tn tone) {
	s.travelTo(t, from, to, lab.AtTail, frame, tn)
}

// travelTo is travel to place at in queue to: the tail, or the head (in
// front of every token there), as a broker's requeue may put it. A
// classic queue puts it back at its original position; with one consumer
// it was the first in the queue, so the head is the true picture.
func (s *scene) travelTo(t *token, from, to string, at lab.Place, frame int, tn tone) {
	if from == "" {
		from = t.queue
	}
	s.finish(t)
	t.queue = to
	if at == lab.AtHead {
		s.members[to] = slices.Insert(s.members[to], 0, t)
	} else {
		s.members[to] = append(s.members[to], t)
	}
	t.move = &mover{tok: t, label: t.id, from: from, to: to, start: frame, head: at == lab.AtHead, tone: tn}
	s.movers = append(s.movers, t.move)
}

// stopMove ends t's journey at once: an event says where it is now.
func (s *scene) stopMove(t *token) { t.move = nil }

// waitBox is where a scheduled task sits out its delay. On a broker that
// is the wait queue the event names (Via), whose TTL then sends it on to
// To; a broker lesson that names no wait queue parks it in To itself. In
// memory no queue holds it: a time.AfterFunc timer in the process's
// memory does, drawn as the timers box.
func waitBox(e lab.Event) string {
	switch {
	case e.Backend != lab.Rabbit:
		return timerNode
	case e.Via != "":
		return e.Via
	}
	return e.To
}

// noteDelay labels box with a delay its tasks wait there, once: a wait
// queue's TTL, or the delays of the timers.
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

// settle applies a summary's fate, the ledger's last word: a task lost or
// dropped without an event of its own leaves its box too.
func (s *scene) settle(t *token, f lab.Fate) {
	if (f == lab.FateLost || f == lab.FateDropped || f == lab.FateRefused) && t.status != gone {
		s.stopMove(t)
		s.finish(t)
		t.status = gone
	}
	s.setFate(t, f)
}

// inTransit reports whether t is still travelling at frame.
func (t *token) inTransit(frame int) bool {
	return t.move != nil && frame < t.move.start+moveFrames
}

// live reports whether mover m still has something to draw at frame: it
// has not arrived, and its token has not been placed by a later event.
func (m *mover) live(frame int) bool {
	return frame < m.start+moveFrames && (m.ghost || m.trail || m.tok.move == m)
}

// prune forgets finished animations; it returns whether any is still running.
func (s *scene) prune(frame int) bool {
	live := s.movers[:0]
	for _, m := range s.movers {
		switch {
		case m.live(frame):
			live = append(live, m)
		case m.tok.move == m:
			m.tok.move = nil // arrived
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
		for _, t := range s.members[n.Name] {
			if t.status == delayed && t.due > nowMs {
				return true
			}
		}
	}
	return false
}

// pending is how many tasks have no final fate yet.
func (s *scene) pending() int { return s.count[lab.FatePending] }

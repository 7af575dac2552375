package inmem

import (
	"sync"
	"time"
)

// delayQueue is a flow.Delay queue in memory, kept the way RabbitMQ keeps
// one: a FIFO in which every task carries its own expiry and only the head
// is ever looked at. One timer is armed for the head; when it fires, the
// head and every task behind it that is already due move on to their
// queue, in order, and the timer is armed for the new head. A task with a
// short delay queued behind a long one waits for the long one: the
// head-of-line trap of seed 002, on purpose. (Plain timers, one per task,
// are the fix: that is how a flow.Wait queue runs in memory.)
type delayQueue struct {
	sys  *System
	held *Queue // the tasks, in order: counted in flight, and lost (reported) with a crash
	to   *Queue // where an expired task goes (the queue's dead-letter route)

	mu    sync.Mutex
	due   []time.Duration // lesson-time expiry of each task in held, in the same order
	timer *time.Timer     // armed for the head; nil when empty
}

func newDelayQueue(sys *System, name string, room int, to *Queue) *delayQueue {
	return &delayQueue{sys: sys, held: sys.Queue(name, room), to: to}
}

// push puts t at the tail with its own delay.
func (d *delayQueue) push(t *Task, delay time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.sys.clock.Elapsed()
	d.held.put(t)
	d.due = append(d.due, now+delay)
	if len(d.due) == 1 {
		d.arm(now)
	}
}

// arm sets the timer for the head's expiry. The caller holds mu.
func (d *delayQueue) arm(now time.Duration) {
	d.timer = nil
	if len(d.due) > 0 {
		d.timer = d.sys.clock.AfterFunc(max(0, d.due[0]-now), d.expire)
	}
}

// expire moves every due task at the head on, in order, then re-arms.
// Like a System timer it delivers nothing once Stop has begun, and Stop
// waits for a delivery in progress.
func (d *delayQueue) expire() {
	s := d.sys
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.begin()
	s.mu.Unlock()
	defer s.end()
	d.mu.Lock()
	defer d.mu.Unlock()
	now := s.clock.Elapsed()
	// Due means due within the clock's resolution: at 7.4× the lesson
	// time a timer wakes at can fall a few nanoseconds short of the
	// expiry it was armed for, and a timer re-armed for less than a real
	// nanosecond fires at once, for ever, under a synctest clock.
	for len(d.due) > 0 && s.clock.Real(d.due[0]-now) <= 0 {
		t, ok := d.held.tryTake()
		if !ok {
			break
		}
		d.due = d.due[1:]
		d.to.put(t) // counted in flight there before it stops counting here
		s.work.done()
	}
	d.arm(now)
}

// stop stops the head's timer (the run is over).
func (d *delayQueue) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}

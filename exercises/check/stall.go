package check

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/queuelab/qlab/lab"
)

// Stall is how long, in real time, a run may go without an event before
// the checker calls it stuck. Inside the synctest bubble a correct run
// takes milliseconds: lesson time jumps ahead whenever every goroutine
// waits on time. It cannot jump while a goroutine is blocked on
// something else, such as a time.Sleep inside ScheduleOn's start func
// (which runs under the system's lock, so every other goroutine queues
// on the lock, not on time): then nothing happens at all, and go test
// would only end it at its -timeout.
const Stall = 3 * time.Second

// StalledCheck is the check a stuck run fails.
const StalledCheck = "lesson time moves on: nothing blocks the run"

// watchdog is a Sink that keeps what the run emitted, and a goroutine
// outside the bubble (real time) that counts the events every Stall/10:
// a run whose count stands still for Stall is reported as the failed
// StalledCheck, and the test binary ends (a goroutine stuck inside the
// bubble cannot be ended any other way). A busy loop that emits nothing
// is caught the same way.
type watchdog struct {
	mu     sync.Mutex
	events []lab.Event // what the run emitted so far; no clock is read in the bubble (its time is fake)
	done   chan struct{}
}

// watch starts a watchdog of the run on plan; stop it when the run ends.
func watch(plan string) *watchdog {
	w := &watchdog{done: make(chan struct{})}
	go w.run(plan)
	return w
}

// Emit records e; the stream calls it inside the bubble.
func (w *watchdog) Emit(e lab.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, e)
}

func (w *watchdog) stop() { close(w.done) }

func (w *watchdog) run(plan string) {
	tick := time.NewTicker(Stall / 10)
	defer tick.Stop()
	seen, since := -1, time.Now()
	for {
		select {
		case <-w.done:
			return
		case now := <-tick.C:
			w.mu.Lock()
			events := append([]lab.Event(nil), w.events...)
			w.mu.Unlock()
			if len(events) != seen {
				seen, since = len(events), now
				continue
			}
			if now.Sub(since) >= Stall {
				w.stalled(plan, events)
			}
		}
	}
}

// current is the Checker of the test that is running (one test at a
// time per exercise), so a stalled run reports the checks before it too.
// The test goroutine is blocked in synctest.Test meanwhile, and every
// check it recorded was recorded before the watchdog started.
var current *Checker

// stalled reports the stuck run as the failed StalledCheck, after the
// checks recorded so far, and ends the test binary.
func (w *watchdog) stalled(plan string, events []lab.Event) {
	res := stalledResult(plan, events)
	if c := current; c != nil {
		c.That(Run{Name: plan, Events: events}, res.Check, false, res.Got, res.Want, "")
		c.report()
	} else {
		emit(res)
	}
	os.Exit(1)
}

// stalledResult is the result of a run that went silent.
func stalledResult(plan string, events []lab.Event) Result {
	at := "00:00.000"
	if len(events) > 0 {
		ms := events[len(events)-1].TMs
		at = fmt.Sprintf("%02d:%02d.%03d", ms/60000, ms/1000%60, ms%1000)
	}
	return Result{Check: StalledCheck, Plan: plan,
		Got: fmt.Sprintf("nothing happened for %v of real time: lesson time stood still at %s", Stall, at),
		Want: "a run that goes on: a wait is a timer or a lesson-clock wait, never a time.Sleep " +
			"inside ScheduleOn's start func (it holds the system's lock) or a loop with no exit",
		Transcript: Transcript(events, "")}
}

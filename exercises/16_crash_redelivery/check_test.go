//go:build qlabex

package survivor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// The world's actors and the time a send takes (lesson time); a live
// worker's send is slow, so the scheduler's second copy reaches the
// survivor while it is still going.
const (
	dead      = "Worker-1" // killed holding five messages
	survivor  = "Worker-2" // runs your Handle
	live      = "Worker-3" // alive, sending the message of the live copy
	sendTime  = 500 * time.Millisecond
	slowSend  = 10 * time.Second
	scheduler = birthday.Scheduler
)

// step is how far the dead worker took a message before it was killed.
type step int

const (
	held    step = iota // taken, not claimed: QUEUED
	claimed             // claimed SENDING, not sent
	sent                // sent, still SENDING
	marked              // sent and marked SENT, not acked
)

func (s step) String() string {
	return [...]string{"held, not claimed (QUEUED)", "claimed SENDING, not sent",
		"sent, still SENDING", "sent and SENT, not acked"}[s]
}

// scenario is one crash: the step each of the dead worker's five messages
// reached, and the message a live worker is sending whose second copy
// (the scheduler published it twice) comes to the survivor.
type scenario struct {
	name  string
	ids   []string
	steps []step
	live  string
}

var scenarios = []scenario{
	{name: "the lesson's crash (R1, R2 SENT; R3 sent, SENDING; R4 SENDING; R5 held)",
		ids:   []string{"R1", "R2", "R3", "R4", "R5"},
		steps: []step{marked, marked, sent, claimed, held}, live: "L1"},
	{name: "another crash (S1 SENDING; S2 held; S3 sent, SENDING; S4 SENT; S5 SENDING)",
		ids:   []string{"S1", "S2", "S3", "S4", "S5"},
		steps: []step{claimed, held, sent, marked, claimed}, live: "L2"},
}

func (sc scenario) named() check.Named {
	tasks := append(append([]string(nil), sc.ids...), sc.live)
	return check.Named{Name: sc.name, Plan: lab.Plan{Tasks: tasks}}
}

func TestCrashRedelivery(t *testing.T) {
	c := check.New(t)
	for _, sc := range scenarios {
		w := &world{sc: sc, db: store.NewMemory(), sends: map[string]int{},
			status: map[string]store.Status{}, redelivered: map[*inmem.Task]bool{}}
		r := check.InMem(t, sc.named(), w.run)
		c.Accounted(r, lab.FateDone)
		w.expect(c, r, marked, "a redelivered message whose row is SENT is skipped, not sent again", 1)
		w.expect(c, r, claimed,
			"a message the dead worker claimed and never sent (SENDING) is taken over and sent", 1)
		c.That(r, "a copy not redelivered whose row a live worker holds SENDING is left to it",
			w.sends[sc.live] == 1,
			fmt.Sprintf("%s: %s in all, %s's and Worker-2's", sc.live, sends(w.sends[sc.live]), live),
			fmt.Sprintf("%s: 1 send, %s's", sc.live, live), sc.live)
		w.expect(c, r, held,
			"a message the dead worker held but never claimed (QUEUED) is claimed and sent", 1)
		w.expect(c, r, sent,
			"a message sent but left SENDING is sent again: the resend policy's one duplicate", 2)
		c.That(r, "the mail API sends a message only while its row is SENDING", w.unclaimed == "",
			w.unclaimed, "every send of yours finds its row SENDING", w.unclaimedTask)
		for _, id := range r.Plan.Tasks {
			c.Expect(r, "every row ends SENT in the store", id+": "+string(w.status[id]), id+": SENT", id)
		}
	}
}

// expect checks that every message the dead worker took to step st was
// sent want times in all.
func (w *world) expect(c *check.Checker, r check.Run, st step, name string, want int) {
	for i, id := range w.sc.ids {
		if w.sc.steps[i] != st {
			continue
		}
		c.Expect(r, name, fmt.Sprintf("%s (%s at the crash): %s in all", id, st, sends(w.sends[id])),
			fmt.Sprintf("%s (%s at the crash): %s in all", id, st, sends(want)), id)
	}
}

// world is one crash: the dead worker's steps, the broker's redelivery,
// the survivor running the student's Handle, the live worker, the store
// and a mail API that counts.
type world struct {
	sc  scenario
	db  *store.Memory
	sys *inmem.System

	mu                       sync.Mutex
	sends                    map[string]int
	liveSending              bool // the live worker has not finished its send
	redelivered              map[*inmem.Task]bool
	unclaimed, unclaimedTask string // the first of the survivor's sends whose row was not SENDING
	status                   map[string]store.Status
}

func (w *world) run(ctx context.Context, s *lab.Stream) error {
	w.sys = inmem.New(ctx, s, w.sc.named().Plan)
	room := len(w.sc.ids) + 2
	queue := w.sys.Queue(birthday.Queue, room)
	dlq := w.sys.HoldingQueue(birthday.DLQ, room)
	for _, id := range append(append([]string(nil), w.sc.ids...), w.sc.live) {
		row := store.Row{ID: id, Kind: "birthday", Status: store.Queued}
		if _, err := w.db.Insert(ctx, row); err != nil {
			return err
		}
	}
	if err := w.crash(ctx); err != nil {
		return err
	}
	for _, id := range w.sc.ids {
		t := &inmem.Task{ID: id}
		w.redelivered[t] = true
		queue.Redeliver("Broker", t,
			dead+" was killed (SIGKILL) holding it unacked: redelivered to the survivor")
	}
	// The live worker's copy comes on a queue of its own, so it (not the
	// survivor) takes it; the scheduler's second copy follows the five.
	mine := w.sys.Queue(birthday.Queue, 1)
	w.liveSending = true
	w.sys.Worker(live, mine, func(t *inmem.Task) { w.liveWorker(ctx, mine, t) })
	mine.Enqueue(scheduler, w.sc.live)
	queue.Enqueue(scheduler, w.sc.live)
	w.sys.Worker(survivor, queue, func(t *inmem.Task) { w.survive(ctx, queue, dlq, t) })
	err := w.sys.Wait(ctx)
	for _, id := range w.sc.named().Plan.Tasks {
		r, gerr := w.db.Get(ctx, id)
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		w.status[id] = r.Status
	}
	return err
}

// crash plays the dead worker: the scheduler publishes the five, the
// worker takes them all (prefetch 5) and takes each to its step, acking
// none; then it is killed.
func (w *world) crash(ctx context.Context) error {
	st := w.sys.Stream()
	for _, id := range w.sc.ids {
		st.Emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: birthday.Queue, Actor: scheduler})
	}
	for i, id := range w.sc.ids {
		step := w.sc.steps[i]
		if step == held {
			continue
		}
		if won, err := w.db.Claim(ctx, id); err != nil || !won {
			return fmt.Errorf("the dead worker's claim of %s: won %v, %v", id, won, err)
		}
		e := lab.Event{Kind: lab.Started, Task: id, Queue: birthday.Queue, Actor: dead, Attempt: 1}
		st.Emit(e) // the claim: SENDING
		if step == claimed {
			continue
		}
		if err := w.mail(ctx, dead, id, sendTime); err != nil {
			return err
		}
		if step == sent {
			continue
		}
		if err := w.db.MarkSent(ctx, id); err != nil {
			return err
		}
		e.Kind, e.Note = lab.Succeeded, "marked SENT; killed before the ack"
		st.Emit(e)
	}
	return nil
}

// mail is the mail API: a send takes d and counts.
func (w *world) mail(ctx context.Context, actor, id string, d time.Duration) error {
	if err := w.sys.Clock().Wait(ctx, d); err != nil {
		return err
	}
	w.mu.Lock()
	w.sends[id]++
	n := w.sends[id]
	w.mu.Unlock()
	w.sys.Stream().Emit(lab.Event{Kind: lab.Mailed, Task: id, Actor: "Mail-API",
		Note: fmt.Sprintf("greeting %d for %s, sent for %s", n, id, actor)})
	return nil
}

// liveWorker is a worker that is alive: it claims its copy, sends it
// slowly and marks it SENT (a row someone else marked SENT meanwhile is
// noted, not an error of its own).
func (w *world) liveWorker(ctx context.Context, q *inmem.Queue, t *inmem.Task) {
	w.sys.Begin(live, q, t)
	note := "claimed, sent, marked SENT"
	if won, err := w.db.Claim(ctx, t.ID); err != nil || !won {
		note = "its claim failed: another worker had the row"
	}
	err := w.mail(ctx, live, t.ID, slowSend)
	if err == nil {
		if err := w.db.MarkSent(ctx, t.ID); errors.Is(err, store.ErrNotSending) {
			note = "sent, but the row was no longer SENDING: another worker took it over"
		}
	}
	w.mu.Lock()
	w.liveSending = false
	w.mu.Unlock()
	w.sys.Succeed(live, q, t, note)
}

// survive runs the student's Handle on one delivery to the survivor.
func (w *world) survive(ctx context.Context, q, dlq *inmem.Queue, t *inmem.Task) {
	redelivered := w.redelivered[t] // the dead worker's five; the live copy is new
	t.Attempt++
	start := lab.Event{Kind: lab.Started, Task: t.ID, Queue: q.Name(), Actor: survivor, Attempt: t.Attempt}
	if redelivered {
		start.Note = "redelivered: the delivery Worker-1 never acked"
	}
	w.sys.Stream().Emit(start)
	called := false
	d := Delivery{ID: t.ID, Redelivered: redelivered}
	err := Handle(ctx, w.db, d, func(ctx context.Context) error {
		if called {
			return errors.New("one send per delivery: send was already called")
		}
		called = true
		if r, err := w.db.Get(ctx, t.ID); err == nil && r.Status != store.Sending {
			w.mu.Lock()
			if w.unclaimed == "" {
				w.unclaimed, w.unclaimedTask = fmt.Sprintf("%s sent while its row was %s", t.ID, r.Status), t.ID
			}
			w.mu.Unlock()
		}
		return w.mail(ctx, survivor, t.ID, sendTime)
	})
	row, _ := w.db.Get(ctx, t.ID)
	switch {
	case err != nil:
		w.sys.Stream().Emit(lab.Event{Kind: lab.Failed, Task: t.ID, Queue: q.Name(), Actor: survivor,
			Attempt: t.Attempt, Note: err.Error()})
		q.DeadLetter(survivor, t, dlq, "Handle returned an error")
	case called:
		w.sys.Succeed(survivor, q, t, "sent; its row "+string(row.Status))
	case w.neverSent(t.ID):
		w.sys.Stream().Emit(lab.Event{Kind: lab.Lost, Task: t.ID, Queue: q.Name(), Actor: survivor,
			Attempt: t.Attempt,
			Note:    "skipped, row " + string(row.Status) + ": but no one ever sent it, and no one will"})
	default:
		w.sys.Skip(survivor, q, t, "skipped, its row "+string(row.Status))
	}
}

// neverSent reports whether a skipped message is lost: nobody sent it
// and nobody is sending it.
func (w *world) neverSent(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sends[id] == 0 && !(id == w.sc.live && w.liveSending)
}

// sends is n sends in words.
func sends(n int) string { return check.Count(n, "send") }

//go:build qlabex

package idempotent

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// maxAttempts is each task's delivery budget, as in lesson Q06; then the
// checker parks it in the dead-letter queue.
const maxAttempts = 3

// errDied is what every call returns once the process has died.
var errDied = errors.New("the process died earlier in this delivery: nothing after that point happens")

func TestIdempotentSend(t *testing.T) {
	c := check.New(t)
	// Seeds 11 and 21 fail some tasks' first attempts and not their next
	// (D, then B and D): a handler that writes before it sends loses
	// those emails; on seed 21 the redelivered A fails too.
	for _, plan := range []check.Named{check.Plans()[0], check.Seeded(11), check.Seeded(21)} {
		var w *world
		r := check.OnQueue(t, plan, func(sys *inmem.System, queue *inmem.Queue, room int) {
			w = newWorld(sys, plan.Plan, queue, sys.HoldingQueue("dlq", room))
			sys.Worker("Worker", queue, w.deliver)
		})
		c.Accounted(r, lab.FateDone, lab.FateDead)
		for _, id := range r.Plan.Tasks {
			n := w.mail.sent[id]
			c.That(r, "no customer gets an email twice", n <= 1,
				id+": "+emails(n), id+": "+emails(1), id)
			if fate, _ := r.Fate(id); fate == lab.FateDone {
				c.Expect(r, "a task that ends done had its email sent (none lost silently)",
					id+" ends done, "+emails(n), id+" ends done, "+emails(1), id)
			}
		}
		c.Expect(r, "a repeat of a task already done is answered from your store: the mail server is not asked again",
			fmt.Sprintf("%s redelivered after its ack was lost: %d calls to the mail server", w.ackLost, w.repeatCalls),
			fmt.Sprintf("%s redelivered after its ack was lost: 0 calls to the mail server", w.ackLost), w.ackLost)
	}
}

// world is what the student's handler talks to in one run: a mail server
// that counts the emails each customer got, and a database. Its worker
// runs the handler once per delivery on one goroutine.
type world struct {
	sys        *inmem.System
	plan       lab.Plan
	queue, dlq *inmem.Queue
	mail       *mailServer
	db         *store

	ackLost     string // the task whose first successful delivery loses its ack
	repeating   bool   // ackLost has been redelivered: count its mail calls
	repeatCalls int
}

func newWorld(sys *inmem.System, plan lab.Plan, queue, dlq *inmem.Queue) *world {
	w := &world{sys: sys, plan: plan, queue: queue, dlq: dlq,
		mail: &mailServer{sent: map[string]int{}, byKey: map[string]string{}}, db: &store{rows: map[string]string{}}}
	if len(plan.Tasks) > 0 {
		w.ackLost = plan.Tasks[0]
	}
	return w
}

// deliver is one delivery of t: the student's Handle, with the process
// dying right after the handler's first change when the plan fails this
// attempt; then the ack, a redelivery, a retry or the dead-letter queue.
func (w *world) deliver(t *inmem.Task) {
	w.sys.Begin("Worker", w.queue, t)
	d := &delivery{w: w, task: t.ID, attempt: t.Attempt, dies: w.plan.Fails(t.ID, t.Attempt) != nil}
	err := Handle(t.ID, d, d)
	if t.ID == w.ackLost && w.repeating {
		w.repeatCalls += d.sends
	}
	calls := strings.Join(d.calls, "; ")
	switch {
	case d.dies:
		why := "the process died before the ack"
		if d.died != "" {
			why = "the process died right after " + d.died
		}
		w.failed(t, why+" (calls: "+orNothing(calls)+")")
	case err != nil:
		w.failed(t, err.Error()+" (calls: "+orNothing(calls)+")")
	case d.sends == 0:
		w.sys.Skip("Worker", w.queue, t, "answered without the mail server (calls: "+orNothing(calls)+")")
	default:
		w.sys.Succeed("Worker", w.queue, t, "calls: "+calls)
		if t.ID == w.ackLost && !w.repeating {
			w.repeating = true
			w.queue.Redeliver("Broker", t, "its ack was lost, so the broker delivers it again")
		}
	}
}

func (w *world) failed(t *inmem.Task, note string) {
	w.sys.Stream().Emit(lab.Event{Kind: lab.Failed, Task: t.ID, Queue: w.queue.Name(), Actor: "Worker", Attempt: t.Attempt, Note: note})
	if t.Attempt < maxAttempts {
		w.queue.Requeue("Worker", t)
		return
	}
	w.queue.DeadLetter("Worker", t, w.dlq, fmt.Sprintf("failed %d deliveries", t.Attempt))
}

func emails(n int) string {
	if n == 1 {
		return "1 email sent"
	}
	return fmt.Sprintf("%d emails sent", n)
}

func orNothing(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// mailServer sends emails, counting them per customer (task), and keeps
// the message id of each idempotency key.
type mailServer struct {
	mu    sync.Mutex
	total int
	sent  map[string]int
	byKey map[string]string
}

// send returns the message id and whether an email went out.
func (m *mailServer) send(task, key string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg, ok := m.byKey[key]; ok && key != "" {
		return msg, false
	}
	m.total++
	m.sent[task]++
	msg := fmt.Sprintf("msg-%d", m.total)
	if key != "" {
		m.byKey[key] = msg
	}
	return msg, true
}

// store is the database: a map under a lock, each method one statement.
type store struct {
	mu   sync.Mutex
	rows map[string]string
}

// delivery is the MailServer and Store one delivery sees: it logs each
// call and, when the delivery dies, lets the first change happen and
// nothing after it.
type delivery struct {
	w       *world
	task    string
	attempt int
	dies    bool     // the plan fails this attempt
	died    string   // the change after which the process died
	calls   []string // what the handler did, in order
	sends   int      // calls to the mail server
}

// change runs a call that changes the world, unless the process has
// died; it dies right after the first change of a delivery that dies.
func (d *delivery) change(what string, do func() (string, bool)) error {
	if d.died != "" {
		d.calls = append(d.calls, what+" → never made")
		return errDied
	}
	result, changed := do()
	d.calls = append(d.calls, what+result)
	if d.dies && changed {
		d.died = what
	}
	return nil
}

func (d *delivery) Send(task, key string) (string, error) {
	var msg string
	err := d.change(fmt.Sprintf("Send(%q, key %q)", task, key), func() (string, bool) {
		d.sends++
		m, sent := d.w.mail.send(task, key)
		msg = m
		if !sent {
			return " → " + m + ", already sent for that key: nothing sent", true
		}
		d.w.sys.Stream().Emit(lab.Event{Kind: lab.Mailed, Task: d.task, Actor: "Mail-Server", Note: "email " + m})
		_ = d.w.sys.Sleep(d.w.sys.Context(), d.w.plan.WorkTime(d.task, d.attempt)) // on the wire; a stopped run ends it early
		return " → sent " + m, true
	})
	return msg, err
}

func (d *delivery) Get(key string) (string, bool) {
	if d.died != "" {
		return "", false
	}
	d.w.db.mu.Lock()
	defer d.w.db.mu.Unlock()
	v, ok := d.w.db.rows[key]
	if ok {
		d.calls = append(d.calls, fmt.Sprintf("Get(%q) → %q", key, v))
	} else {
		d.calls = append(d.calls, fmt.Sprintf("Get(%q) → none", key))
	}
	return v, ok
}

func (d *delivery) Put(key, value string) error {
	return d.change(fmt.Sprintf("Put(%q, %q)", key, value), func() (string, bool) {
		d.w.db.mu.Lock()
		defer d.w.db.mu.Unlock()
		d.w.db.rows[key] = value
		return "", true
	})
}

func (d *delivery) Insert(key, value string) (bool, error) {
	inserted := false
	err := d.change(fmt.Sprintf("Insert(%q, %q)", key, value), func() (string, bool) {
		d.w.db.mu.Lock()
		defer d.w.db.mu.Unlock()
		if _, ok := d.w.db.rows[key]; ok {
			return " → conflict, nothing written", false
		}
		d.w.db.rows[key], inserted = value, true
		return " → inserted", true
	})
	return inserted, err
}

func (d *delivery) Delete(key string) error {
	return d.change(fmt.Sprintf("Delete(%q)", key), func() (string, bool) {
		d.w.db.mu.Lock()
		defer d.w.db.mu.Unlock()
		delete(d.w.db.rows, key)
		return "", true
	})
}

// Package q11 is lesson Q11 — scheduled emails.
//
// Notice: (a) an in-process timer loses the mails it holds when the scheduler
// stops; (b) a per-message TTL makes the 1 s mail wait behind the 5 s one,
// because the broker expires only the head of a queue (classic and, measured on
// 3.10.8 and 4.3.6, quorum queues too); (c) fixed-TTL wait queues and a
// stateless router are on time, even across a scheduler restart. The
// delayed-message plugin the seed names is left out: it is no longer maintained
// and loses its delayed messages with their node.
//
// Why so long: three strategies, each a scheduler and a worker on the
// broker, with the scheduler stopped mid-run in (a) and restarted in (c);
// schedule.go parses the seed's scheduledTime as its API would, export.go
// is what qlab serve reuses of strategy (c), and report.go holds the
// tables.
package q11

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/mail"
)

var Lesson = lesson.Lesson{
	ID:         "Q11",
	WatchSpeed: 1, // a watchable pace in the TUI
	Title:      "Scheduled emails: timer, per-message TTL, delay levels",
	Notice: "Mails due in 5 s, 1 s and in the past, three ways: (a) an in-process timer loses the " +
		"mails it held when the scheduler stops; (b) one delay queue with a per-message TTL makes " +
		"the 1 s mail wait behind the 5 s one, as RabbitMQ expires only a queue's head; (c) wait " +
		"queues with one fixed TTL each and a stateless router are on time, even across a " +
		"restart. The seed's delayed-message plugin is left out: no longer maintained, it keeps " +
		"delayed messages on one node only.",
	Rabbit:     runQ11Rabbit,
	Faults:     true, // in the fault suite (lessons/faults)
	Topologies: func() []flow.Topology { return []flow.Topology{q11Topology()} },
	// (a): the 5 s mail's only copy is the timer the stopped scheduler held.
	LosesOnPurpose: []string{"a-5s"},
}

// The lesson's queues (seed names; the run adds its prefix).
// (c) is seed 001's service as seeds/mail builds it: its mail queue,
// router queue, wait queues, header, router and worker.
const (
	q11DelayQueue = "mail.delay" // (b): per-message TTL, dead-letters into mail.queue
	// q11Memory is not a queue: it stands for the scheduler's timers in (a).
	q11Memory = "scheduler memory"
)

// The lesson's actors.
// (the mail worker and the routers are mail.WorkerActor and
// mail.RouterActor).
const (
	q11TimerSched = "Timer-Scheduler"
	q11TTLSched   = "TTL-Scheduler"
	q11LevelSched = "Level-Scheduler" // + "-1", "-2": one per scheduler process
)

// The schedule, in lesson time from each strategy's start: the 5 s mail is
// requested before the 1 s one, and one is already overdue.
var q11Schedule = []struct {
	suffix string
	in     time.Duration
}{{"5s", 5 * time.Second}, {"1s", time.Second}, {"past", -2 * time.Second}}

// q11BadRequest is a request whose scheduledTime does not parse: the
// scheduler refuses it before any mail exists.
const q11BadRequest = "next tuesday 9am"

// Strategy timings, in lesson time from the strategy's start.
const (
	q11TimerStop    = 3 * time.Second        // (a): the scheduler process stops
	q11RestartAt    = 2 * time.Second        // (c): the scheduler's connection is closed…
	q11RestartPause = 500 * time.Millisecond // …and a new scheduler starts this much later
)

// q11Lesson is one run: the broker session that owns the queues and the
// mail worker, the calendar, and the book of what each mail did.
type q11Lesson struct {
	env  *lesson.Env
	s    *rabbit.Session
	cal  mail.Calendar
	book *mailBook
	// timerStop is when (a)'s scheduler stopped; restartStop and
	// restartStart are when (c)'s first scheduler closed its connection and
	// when the second one was up; all in lesson time.
	timerStop, restartStop, restartStart time.Duration
}

func runQ11Rabbit(ctx context.Context, env *lesson.Env) error {
	s, err := rabbitenv.Session(ctx, env)
	if err != nil {
		return err
	}
	defer rabbitenv.CloseSession(ctx, env, s)
	if err := s.Topo().Declare(ctx, q11Topology()); err != nil {
		return err
	}
	l := &q11Lesson{env: env, s: s, cal: mail.NewCalendar(env.Stream.Clock()), book: &mailBook{}}
	if err := l.startWorker(ctx); err != nil {
		return err
	}
	_, _, badErr := mail.ParseScheduledTime(q11BadRequest, l.cal.Now())
	strategies := []struct {
		name string
		run  func(context.Context) error
	}{
		{"a", l.runTimer},
		{"b", l.runPerMessageTTL},
		{"c", l.runLevels},
	}
	for _, st := range strategies {
		if err := st.run(ctx); err != nil {
			return fmt.Errorf("strategy (%s): %w", st.name, err)
		}
		if err := s.Watch().WaitSettled(ctx, env.Stream, nil); err != nil {
			return fmt.Errorf("strategy (%s): waiting for its mails: %w", st.name, err)
		}
	}
	l.report(badErr)
	return nil
}

// q11Topology is the mail queue, (b)'s delay queue, and (c)'s level wait
// queues, which all dead-letter into the router's queue.
func q11Topology() flow.Topology {
	t := mail.Topology()
	delay := flow.Queue{Name: q11DelayQueue, Role: flow.Delay, DeadLetterTo: mail.MailQueue}
	t.Queues = slices.Insert(t.Queues, 1, delay) // after mail.queue, as the lesson declared it
	return t
}

// startWorker starts the seed's mail worker on the lesson's session,
// noting in the book when each mail went out.
func (l *q11Lesson) startWorker(ctx context.Context) error {
	return mail.StartWorker(ctx, l.s, l.env.Stream, l.cal, mail.Hooks{Sent: l.book.delivered})
}

// requests builds strategy prefix's schedule relative to now: task ids
// prefix-5s, prefix-1s, prefix-past.
func (l *q11Lesson) requests(prefix string) []mail.Mail {
	now := l.cal.Now()
	out := make([]mail.Mail, 0, len(q11Schedule))
	for _, m := range q11Schedule {
		id := prefix + "-" + m.suffix
		out = append(out, mail.Mail{Task: id, To: "recipient@example.com", Subject: "Scheduled mail " + id,
			ScheduledTime: now.Add(m.in).Format(mail.ISOMillis)})
	}
	return out
}

// accept validates req and records the mail in the book and the stream
// (enqueued at the place it first waits). It returns the lesson-time
// delay until the mail is due, 0 if it is due already.
func (l *q11Lesson) accept(strategy, actor string, req mail.Mail, waitsIn string) (time.Duration, error) {
	due, delay, err := mail.ParseScheduledTime(req.ScheduledTime, l.cal.Now())
	if err != nil {
		return 0, err
	}
	if delay == 0 {
		waitsIn = mail.MailQueue
	}
	now := l.env.Stream.Clock().Elapsed()
	l.book.add(mailRow{strategy: strategy, task: req.Task, scheduledTime: req.ScheduledTime,
		due: max(now, l.cal.Offset(due)), path: []string{waitsIn}})
	note := "scheduledTime " + req.ScheduledTime
	if delay == 0 {
		note += ", already due: sent at once"
	}
	l.env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: req.Task, Queue: waitsIn, Actor: actor, Note: note})
	return delay, nil
}

// ---- (a) the seed's way: a timer in the scheduler's memory --------------

// timerScheduler holds each mail in an in-process timer and publishes it
// when due. Stop ends the process's work: every timer still pending is a
// mail nobody else knows about.
type timerScheduler struct {
	l       *q11Lesson
	s       *rabbit.Session
	pub     *rabbit.Publisher
	mu      sync.Mutex
	pending map[string]timedMail
	stopped bool
	// stopAt is when the process is to stop (lesson time; 0 until
	// planned). What is due by then is sent, what is due later dies with
	// the process, whenever the stop and the timers really run: at 20x
	// the margins are tens of milliseconds, and a late wake-up must not
	// turn a lost mail into a sent one.
	stopAt time.Duration
}

// timedMail is a mail the scheduler holds: its timer, and when it is due
// (lesson time).
type timedMail struct {
	timer *time.Timer
	due   time.Duration
	req   mail.Mail
}

func (l *q11Lesson) runTimer(ctx context.Context) error {
	start := l.env.Stream.Clock().Elapsed()
	s, err := l.s.Sibling(ctx) // the scheduler's own connection
	if err != nil {
		return err
	}
	pub, err := s.Publisher(ctx)
	if err != nil {
		_ = s.Close(ctx)
		return err
	}
	ts := &timerScheduler{l: l, s: s, pub: pub, pending: map[string]timedMail{}}
	// A first plan before any timer exists: on a loaded broker the
	// scheduling below once outlasted the 5 s mail's delay (at 20x, a
	// quarter of a real second), its timer fired before the plan below
	// was made, and the mail the stop loses was sent.
	ts.planStop(start + q11TimerStop)
	for _, req := range l.requests("a") {
		if err := ts.schedule(ctx, req); err != nil {
			ts.stop(ctx)
			return err
		}
	}
	// The stop falls between the 1 s and the 5 s mail's due times however
	// long the scheduling took (a loaded broker): 3 s after the start, or
	// 2 s after the last request was scheduled, whichever is later.
	// It never falls after the 5 s mail's due time: on a broker slow
	// enough to stretch the scheduling past 3 s, "2 s after the last
	// request" let that mail's timer fire first, and it was sent.
	stopAt := max(start+q11TimerStop, l.env.Stream.Clock().Elapsed()+q11TimerStop-time.Second)
	if last, ok := ts.lastDue(); ok {
		stopAt = min(stopAt, last-time.Second/2)
	}
	ts.planStop(stopAt)
	if err := sleepUntil(ctx, l.env.Stream.Clock(), stopAt); err != nil {
		ts.stop(ctx)
		return err
	}
	ts.stop(ctx)
	l.timerStop = l.env.Stream.Clock().Elapsed()
	return nil
}

// schedule computes the delay and starts a timer, or publishes at once.
func (ts *timerScheduler) schedule(ctx context.Context, req mail.Mail) error {
	l := ts.l
	delay, err := l.accept("a", q11TimerSched, req, q11Memory)
	if err != nil {
		return err
	}
	if delay == 0 {
		return ts.pub.Publish(ctx, mail.MailQueue, req.Task, req.Body())
	}
	l.env.Stream.Emit(lab.Event{Kind: lab.Scheduled, Task: req.Task, To: q11Memory, Actor: q11TimerSched,
		DelayMs: delay.Milliseconds(), Note: "time.AfterFunc in the scheduler process; due " + req.ScheduledTime})
	ts.mu.Lock()
	defer ts.mu.Unlock()
	clock := l.env.Stream.Clock()
	ts.pending[req.Task] = timedMail{clock.AfterFunc(delay, func() { ts.fire(ctx, req) }), clock.Elapsed() + delay, req}
	l.s.Watch().Expect(delay) // the mail moves again when the timer fires: not a stall
	return nil
}

// planStop fixes when the process stops (see stopAt).
func (ts *timerScheduler) planStop(at time.Duration) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.stopAt = at
}

// diesAtStop reports whether a mail due at due is one the planned stop
// takes with it; ts.mu is held.
func (ts *timerScheduler) diesAtStop(due time.Duration) bool {
	return ts.stopAt > 0 && due > ts.stopAt
}

// lastDue is the latest due time of the mails the timers hold.
func (ts *timerScheduler) lastDue() (time.Duration, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var last time.Duration
	for _, m := range ts.pending {
		last = max(last, m.due)
	}
	return last, len(ts.pending) > 0
}

// fire publishes a mail whose timer expired, unless the scheduler stopped.
// It holds the lock while publishing so stop cannot close the connection
// under it.
func (ts *timerScheduler) fire(ctx context.Context, req mail.Mail) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.stopped || ts.diesAtStop(ts.pending[req.Task].due) {
		return // stop sent it or reports it lost
	}
	ts.publishDue(ctx, req)
}

// publishDue publishes a mail whose time has come; ts.mu is held.
func (ts *timerScheduler) publishDue(ctx context.Context, req mail.Mail) {
	delete(ts.pending, req.Task)
	st := ts.l.env.Stream
	st.Emit(lab.Event{Kind: lab.Moved, Task: req.Task, Queue: q11Memory, To: mail.MailQueue, Actor: q11TimerSched,
		Note: "delay expired, publishing now"})
	if err := ts.pub.Publish(ctx, mail.MailQueue, req.Task, req.Body()); err != nil {
		st.Emit(lab.Event{Kind: lab.Lost, Task: req.Task, Queue: q11Memory, Actor: q11TimerSched, Note: "publish failed: " + err.Error()})
	}
}

// stop is the scheduler process going away: its timers die with it, and
// so do the mails they held. A mail already due whose timer has not run
// yet (a timer fires late on a busy machine) is sent first: the lesson is
// what the stop takes, not the timer's lateness.
func (ts *timerScheduler) stop(ctx context.Context) {
	ts.mu.Lock()
	ts.stopped = true
	now := ts.l.env.Stream.Clock().Elapsed()
	for task, m := range ts.pending {
		m.timer.Stop()
		if m.due <= now && !ts.diesAtStop(m.due) {
			ts.publishDue(ctx, m.req)
			continue
		}
		ts.l.env.Stream.Emit(lab.Event{Kind: lab.Lost, Task: task, Queue: q11Memory, To: mail.MailQueue, Actor: q11TimerSched,
			Note: "the scheduler stopped; its timer was the only copy of the mail"})
	}
	ts.pending = nil
	ts.mu.Unlock()
	_ = ts.s.Close(ctx) // closing the connection closes the publisher's channel too
}

// ---- (b) one delay queue, per-message TTL ---------------------------------

// runPerMessageTTL publishes each mail into mail.delay with its delay as
// the expiration property; the broker dead-letters it into mail.queue when
// it expires, which it only does at the head of the queue.
func (l *q11Lesson) runPerMessageTTL(ctx context.Context) error {
	pub, err := l.s.Publisher(ctx)
	if err != nil {
		return err
	}
	defer pub.Close()
	clock := l.env.Stream.Clock()
	for _, req := range l.requests("b") {
		delay, err := l.accept("b", q11TTLSched, req, q11DelayQueue)
		if err != nil {
			return err
		}
		if delay == 0 {
			if err := pub.Publish(ctx, mail.MailQueue, req.Task, req.Body()); err != nil {
				return err
			}
			continue
		}
		msg := rabbit.Publishing(req.Task, req.Body())
		msg.Expiration = rabbit.Expiration(clock, delay)
		l.env.Stream.Emit(lab.Event{Kind: lab.Scheduled, Task: req.Task, To: q11DelayQueue, Actor: q11TTLSched,
			DelayMs: delay.Milliseconds(), Note: fmt.Sprintf("expiration %s ms (real) on the message; due %s", msg.Expiration, req.ScheduledTime)})
		if err := pub.PublishMessage(ctx, q11DelayQueue, msg); err != nil {
			return err
		}
	}
	return nil
}

// ---- (c) fixed delay levels and a stateless router -----------------------

// levelScheduler is one scheduler process of (c): the seed's router,
// whose connection and publisher it schedules new mails with too. It keeps
// no state: where a mail is and when it is due live on the broker.
type levelScheduler struct {
	l   *q11Lesson
	gen int
	r   *mail.Router
}

func (l *q11Lesson) runLevels(ctx context.Context) error {
	start := l.env.Stream.Clock().Elapsed()
	first, err := l.startLevelScheduler(ctx, 1)
	if err != nil {
		return err
	}
	for _, req := range l.requests("c") {
		if err := first.schedule(ctx, req); err != nil {
			first.stop(ctx)
			return err
		}
	}
	// Restart mid-flight: the 5 s mail is sitting in a wait queue.
	clock := l.env.Stream.Clock()
	if err := sleepUntil(ctx, clock, start+q11RestartAt); err != nil {
		first.stop(ctx)
		return err
	}
	first.stop(ctx)
	l.restartStop = clock.Elapsed()
	if err := sleepUntil(ctx, clock, start+q11RestartAt+q11RestartPause); err != nil {
		return err
	}
	second, err := l.startLevelScheduler(ctx, 2)
	if err != nil {
		return err
	}
	defer second.stop(context.WithoutCancel(ctx))
	l.restartStart = clock.Elapsed()
	return l.s.Watch().WaitSettled(ctx, l.env.Stream, nil)
}

// startLevelScheduler opens scheduler process gen: its router, on a
// connection of its own, noting each hop in the book.
func (l *q11Lesson) startLevelScheduler(ctx context.Context, gen int) (*levelScheduler, error) {
	r, err := mail.StartRouter(ctx, l.s, l.env.Stream, l.cal, gen, mail.Hooks{Waits: l.book.hop})
	if err != nil {
		return nil, err
	}
	return &levelScheduler{l: l, gen: gen, r: r}, nil
}

func (ls *levelScheduler) scheduler() string { return fmt.Sprintf("%s-%d", q11LevelSched, ls.gen) }

// schedule accepts a request and sends the mail on its first hop: the
// longest level that fits its delay, or mail.queue if it is due.
func (ls *levelScheduler) schedule(ctx context.Context, req mail.Mail) error {
	l := ls.l
	due, _, err := mail.ParseScheduledTime(req.ScheduledTime, l.cal.Now())
	if err != nil {
		return err
	}
	first, wait := mail.FirstHop(due.Sub(l.cal.Now()))
	delay, err := l.accept("c", ls.scheduler(), req, first)
	if err != nil {
		return err
	}
	if wait {
		l.env.Stream.Emit(lab.Event{Kind: lab.Scheduled, Task: req.Task, To: first, Actor: ls.scheduler(), DelayMs: delay.Milliseconds(),
			Note: fmt.Sprintf("first hop %s; due %s travels in header %s", first, req.ScheduledTime, mail.DueHeader)})
	}
	return ls.r.Publish(ctx, first, req.Task, req.Body(), req.ScheduledTime)
}

// stop stops the scheduler's router: an unacked mail goes back to
// mail.router and nothing it knew is lost.
func (ls *levelScheduler) stop(ctx context.Context) { ls.r.Stop(ctx) }

// sleepUntil waits until lesson time t, or until ctx ends.
func sleepUntil(ctx context.Context, clock lab.Clock, t time.Duration) error {
	return clock.Wait(ctx, t-clock.Elapsed())
}

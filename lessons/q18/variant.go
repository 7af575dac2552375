package q18

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// epoch is the wall clock at lesson time 0: the store's due times are
// real timestamps, taken from the lesson clock so a run is reproducible.
var epoch = time.Date(2026, time.March, 14, 8, 0, 0, 0, time.UTC)

// row is one message of a scenario: its id, its kind (the routing key)
// and when it is due, in minutes after its variant starts.
type row struct {
	id   string
	kind string
	due  int
}

// variant is one version of the scheduler and its workers, run on a
// backend and a store of its own, so that the cron of one never picks
// another's rows.
type variant struct {
	env   *lesson.Env
	b     flow.Backend
	db    store.Store
	clock lab.Clock
	start time.Duration // lesson time the variant began
	rows  []row
	work  worker
	gate  *gate // part (d): holds each check open until every copy of its row is checked; nil elsewhere
	// dropStore deletes the store; stop disarms the run's planned crash
	// (Options.Interrupt). Both are set by open.
	dropStore, stop func()

	mu        sync.Mutex
	copies    map[string]int             // row → messages published for it
	published map[string]time.Duration   // row → its first publish, from start
	sends     map[string][]time.Duration // row → each send, from start
	absorbed  int                        // copies the claim skipped
	failing   map[string]bool            // rows whose next publish fails (the lab's fault)
	// buffered, when set, is the seed's library taking the fault: the
	// failing publish is held that long (its reconnect), then sent.
	buffered time.Duration
}

// open starts a variant: its store, its backend and topology, its rows
// inserted as CREATED, and `consumers` workers on the main queue. Call
// close when done.
func open(ctx context.Context, env *lesson.Env, name string, rows []row, w worker,
	consumers int, opts ...func(*variant)) (*variant, error) {
	db, err := runstore.Open(ctx, env, name)
	if err != nil {
		return nil, err
	}
	v := &variant{env: env, db: db.Store, clock: env.Stream.Clock(), rows: rows, work: w,
		copies: map[string]int{}, published: map[string]time.Duration{},
		sends: map[string][]time.Duration{}, failing: map[string]bool{}}
	if v.b, err = env.Open(ctx); err != nil {
		db.Drop()
		return nil, err
	}
	v.dropStore, v.stop = db.Drop, func() {}
	for _, o := range opts {
		o(v) // before the workers start
	}
	if err := v.setUp(ctx, consumers); err != nil {
		v.close(ctx)
		return nil, err
	}
	v.stop = env.InterruptOn(v.b)
	return v, nil
}

// setUp declares the topology, starts the workers, then inserts the rows
// due in minutes from now: the variant's start, once everything runs.
func (v *variant) setUp(ctx context.Context, consumers int) error {
	if err := v.env.Declare(ctx, v.b, birthday.Topology()); err != nil {
		return err
	}
	for i := range consumers {
		actor := fmt.Sprintf("Worker-%d", i+1)
		c := flow.Consumer{Queue: birthday.Queue, Actor: actor, Prefetch: birthday.Prefetch, Handle: v.handler(actor)}
		if err := v.b.Consume(ctx, c); err != nil {
			return err
		}
		// Let it start waiting before the next: deliveries go to the
		// workers in turn, in a fixed order (and in memory, every run).
		if err := v.clock.Wait(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	v.start = v.clock.Elapsed()
	for _, r := range v.rows {
		due := v.wall(v.start + time.Duration(r.due)*birthday.Tick)
		if _, err := v.db.Insert(ctx, store.Row{ID: r.id, Kind: r.kind, Due: due}); err != nil {
			return err
		}
	}
	return nil
}

// close ends the backend and drops the store.
func (v *variant) close(ctx context.Context) {
	v.stop()
	v.env.Close(ctx, v.b)
	v.dropStore()
}

// wall is the store's timestamp for lesson time t.
func (v *variant) wall(t time.Duration) time.Time { return epoch.Add(t) }

// now is the wall clock of the lesson.
func (v *variant) now() time.Time { return v.wall(v.clock.Elapsed()) }

// since is lesson time since the variant started.
func (v *variant) since() time.Duration { return v.clock.Elapsed() - v.start }

// cron calls tick on each minute 0 … last of the variant, as a
// `* * * * *` schedule does, and stops at its first error.
func (v *variant) cron(ctx context.Context, last int, tick func(context.Context) error) error {
	for m := range last + 1 {
		if err := v.clock.Wait(ctx, time.Duration(m)*birthday.Tick-v.since()); err != nil {
			return err
		}
		if err := tick(ctx); err != nil {
			return err
		}
	}
	return nil
}

// errPublish is the fault the lab injects: a publish that fails as one
// does when the broker connection drops mid-tick.
var errPublish = errors.New("publish failed: connection reset (the lab's fault)")

// publish sends one copy of row r to the topic exchange, with r's kind as
// the routing key, on behalf of actor. The first copy's task is r's id,
// the next ones id~2, id~3: each message a task of its own, so a
// duplicate is accounted for too. A row marked failing fails once.
func (v *variant) publish(ctx context.Context, actor string, r store.Row) error {
	v.mu.Lock()
	if v.failing[r.ID] && v.buffered > 0 {
		delete(v.failing, r.ID)
		v.mu.Unlock()
		v.env.Log().Info(fmt.Sprintf("q18: %s: published while the connection is down; "+
			"amqp-connection-manager keeps it in memory and sends it after its reconnect, %s on",
			r.ID, v.buffered))
		if err := v.clock.Wait(ctx, v.buffered); err != nil {
			return err
		}
		v.mu.Lock()
	}
	if v.failing[r.ID] {
		delete(v.failing, r.ID)
		v.mu.Unlock()
		return fmt.Errorf("%s: %w", r.ID, errPublish)
	}
	v.copies[r.ID]++
	task := copyTask(r.ID, v.copies[r.ID])
	if _, ok := v.published[r.ID]; !ok {
		v.published[r.ID] = v.since()
	}
	v.mu.Unlock()
	return v.b.PublishTo(ctx, actor, birthday.Exchange, r.Kind, task)
}

// copyTask names copy n of row id.
func copyTask(id string, n int) string {
	if n == 1 {
		return id
	}
	return fmt.Sprintf("%s~%d", id, n)
}

// rowOf is the row a task is a copy of.
func rowOf(task string) string {
	id, _, _ := strings.Cut(task, "~")
	return id
}

// lostAfterQueued reports task lost: the scheduler created it (marked its
// row QUEUED) and its publish failed, so no queue has it and no cron will
// pick its row again.
func (v *variant) lostAfterQueued(id string, err error) {
	at := lab.Event{Task: id, Queue: birthday.Exchange, Actor: birthday.Scheduler}
	enq, lost := at, at
	enq.Kind, enq.Note = lab.Enqueued, "row marked QUEUED, then published"
	lost.Kind = lab.Lost
	lost.Note = fmt.Sprintf("%v; the row stays QUEUED and the cron picks only CREATED rows", err)
	v.env.Stream.Emit(enq)
	v.env.Stream.Emit(lost)
}

// handler is one worker: claim the row (the idempotency check), send it,
// record it, ack. A claim it loses means another copy has the row: the
// delivery is acked and reported as a duplicate.
func (v *variant) handler(actor string) flow.Handler {
	return func(ctx context.Context, d *flow.Delivery) flow.Decision {
		id := rowOf(d.Task)
		mine, err := v.work.claim(ctx, v, id)
		if err != nil {
			return flow.Park(birthday.DLQ, err.Error())
		}
		if v.gate != nil {
			v.gate.pass(ctx, id)
		}
		if !mine {
			v.skip(ctx, d, actor, id)
			return flow.Ack()
		}
		err = v.env.Stream.Attempt(d.Event(actor), func() error { return v.send(ctx, id) })
		if err != nil {
			return flow.Park(birthday.DLQ, err.Error())
		}
		return flow.Ack()
	}
}

// send is the external API call, then the worker's record of it.
func (v *variant) send(ctx context.Context, id string) error {
	if err := v.clock.Wait(ctx, sendTime); err != nil {
		return err
	}
	v.mu.Lock()
	v.sends[id] = append(v.sends[id], v.since())
	v.mu.Unlock()
	return v.work.done(ctx, v.db, id)
}

// skip reports d absorbed by the claim.
func (v *variant) skip(ctx context.Context, d *flow.Delivery, actor, id string) {
	v.mu.Lock()
	v.absorbed++
	v.mu.Unlock()
	status := "taken"
	if r, err := v.db.Get(ctx, id); err == nil {
		status = string(r.Status)
	}
	e := d.Event(actor)
	e.Kind = lab.Duplicate
	e.Note = fmt.Sprintf("row %s is %s: another delivery claimed it; acked, not sent", id, status)
	v.env.Stream.Emit(e)
}

// outcome is what a variant measured, read once it is done.
type outcome struct {
	name      string
	rows      []row
	status    map[string]store.Status
	counts    map[store.Status]int
	copies    map[string]int
	published map[string]time.Duration
	sends     map[string][]time.Duration
	absorbed  int
}

// finish waits for the workers to drain, then reads the measures and the
// store's final state.
func (v *variant) finish(ctx context.Context, name string) (outcome, error) {
	if err := v.b.Wait(ctx); err != nil {
		return outcome{}, err
	}
	v.mu.Lock()
	o := outcome{name: name, rows: v.rows, status: map[string]store.Status{},
		copies: maps.Clone(v.copies), published: maps.Clone(v.published),
		sends: maps.Clone(v.sends), absorbed: v.absorbed}
	v.mu.Unlock()
	for _, r := range v.rows {
		got, err := v.db.Get(ctx, r.id)
		if err != nil {
			return o, err
		}
		o.status[r.id] = got.Status
	}
	var err error
	o.counts, err = v.db.Counts(ctx)
	return o, err
}

// sentTwice is how many rows were sent more than once.
func (o outcome) sentTwice() (n int) {
	for _, s := range o.sends {
		if len(s) > 1 {
			n++
		}
	}
	return n
}

// sentOnce is how many rows were sent exactly once.
func (o outcome) sentOnce() (n int) {
	for _, s := range o.sends {
		if len(s) == 1 {
			n++
		}
	}
	return n
}

// messages is how many messages the scheduler published.
func (o outcome) messages() (n int) {
	for _, c := range o.copies {
		n += c
	}
	return n
}

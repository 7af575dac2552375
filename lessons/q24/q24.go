// Package q24 is lesson Q24 — a retry exchange, your own retry header, and
// the DLQ consumer loop (seed 004's RaffleAPI).
//
// Notice: the RaffleAPI's consumer inserts each user; on a DB error it
// publishes the user through raffle_retry_exchange into raffle_retry_10s
// with x-retries+1, then acks. The 10 s TTL is the whole "backoff": every
// retry waits the same 10 s, so three deliveries span 20 s and a longer
// outage parks every user in raffle_dlq (a). "Max 3 attempts" with an
// x-retries that starts absent reads two ways: 3 deliveries or 4 (b). The
// publish and the ack are two steps: a crash between them leaves two
// copies, the redelivered original carrying the lower count (c). Malformed
// JSON is "rejected to the DLQ" and "discarded" in one seed: both run (d).
// The DLQ consumer rejects with requeue: a hot loop for a bad message or
// while the DB is down, measured, then bounded by the lab's own header
// and a parking queue (e). The lab's consumer there costs 50 ms a
// delivery; the seed's own libraries spin far faster (libraries.go:
// amqplib measured, Broadway quoted), and under Broadway the bad message
// spins in the processor while the user waits out its batch timer.
//
// x-retries is the RaffleAPI's header and is used where the lesson plays
// the seed; it works on RabbitMQ 3.10.8 and 4.3.6 (compare 24 --broker:
// the same fates), but x- names are the broker's (Q13), so the lab's fix
// counts in its own qlab-retries.
//
// Why so long: five parts, (a) to (e), each a claim of the seed run on the
// broker with its own load and table: window.go, crash.go, malformed.go,
// dlqloop.go, and libraries.go for what amqplib and Broadway do with part
// (e)'s loop.
package q24

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/raffle"
	"github.com/queuelab/qlab/store"
)

var Lesson = lesson.Lesson{
	ID:    "Q24",
	Title: "A retry exchange, your own retry header, and the DLQ consumer loop",
	Notice: "The RaffleAPI retries a failed insert through raffle_retry_10s, the same 10 s each time, " +
		"so a DB outage longer than about 20 s parks every user. \"Max 3 attempts\" allows 3 or 4 " +
		"deliveries by how x-retries is read, publishing the retry before the ack duplicates a " +
		"user on a crash, and malformed JSON is both parked and discarded. The DLQ consumer's " +
		"reject-and-requeue spins (amqplib at hundreds to thousands a second) until a bounded " +
		"count with a parking queue stops it.",
	InMem:      runQ24,
	Rabbit:     runQ24,
	WatchSpeed: 10, // about 95 s of lesson time in under 10 s
	Length:     85 * time.Second,
	// A TTL is real time: room for a busy machine's lateness. At 10, part
	// (a)'s 30 s outage (10 s past the 20 s edge) read done once in CI: a
	// retry 1 s real late.
	TestSpeed: 5,
	Parity: lesson.Parity{TimingSensitive: "part (e)'s hot loop spins as fast as the " +
		"mechanism redelivers, so its counts (not its fates) depend on the backend",
		Raced: LatelySaved},
	Topologies: func() []flow.Topology { return []flow.Topology{Topology()} },
	Faults:     true, // in the fault suite (lessons/faults)
	Store:      true, // the fault suite cuts its status store's database too
}

// The seed's numbers (RETRY_TTL_MS is raffle.RetryTTL), in lesson time,
// and the lab's.
const (
	MaxRetries = 3 // MAX_RETRIES: "maximum attempts before DLQ"
	// stepTime is what one delivery costs a consumer: decode, a batch of
	// one, a round trip to the database (a refused connection answers as
	// fast as a good insert).
	stepTime = 50 * time.Millisecond
)

// The lab's fix for the DLQ consumer: a wait queue back into raffle_dlq
// and a parking queue nothing consumes.
const (
	DLQWait  = "raffle_dlq_retry_10s"
	Parked   = "raffle_parked"
	dlqTries = 3 // the fixed DLQ consumer's attempts before it parks
)

// Topology is the seed's (raffle.Topology) with the fix's two queues.
func Topology() flow.Topology {
	t := raffle.Topology()
	t.Queues = append(t.Queues,
		flow.Queue{Name: DLQWait, Role: flow.Wait, TTL: raffle.RetryTTL, DeadLetterTo: raffle.DLQ},
		flow.Queue{Name: Parked, Role: flow.DLQ})
	return t
}

// runQ24 runs the five parts in order.
func runQ24(ctx context.Context, env *lesson.Env) error {
	for _, part := range []lesson.RunFunc{recovery, readings, crash, malformed, dlqLoop} {
		if err := part(ctx, env); err != nil {
			return err
		}
	}
	return nil
}

// Errors a consumer meets.
var (
	errDBDown    = errors.New("db_error: connection refused")
	errMalformed = errors.New("malformed JSON")
)

// copySuffix marks the second message of a user duplicated by part (c).
const copySuffix = ".copy"

// userOf is the user task carries: the seed's body, {id, name, email}.
func userOf(task string) store.User {
	id := strings.TrimSuffix(task, copySuffix) // a copy carries the same user
	return store.User{ID: "uuid-" + id, Name: "User " + id, Email: id + "@raffle.test"}
}

// body is the JSON the API published for task; a task whose id says bad carries
// a body cut short, as a broken client would send it. The seam carries
// task ids, so the lesson keeps the body beside them and the consumer
// parses these bytes.
func body(task string) []byte {
	if strings.Contains(task, "bad") {
		return []byte(`{"name": "Bo", "email": `)
	}
	b, _ := json.Marshal(map[string]string{ // a map of strings always marshals
		"id": userOf(task).ID, "name": userOf(task).Name, "email": userOf(task).Email})
	return b
}

// decode is the consumer's "Validate JSON": the user, or errMalformed.
func decode(task string) (store.User, error) {
	var u struct{ ID, Name, Email string }
	if err := json.Unmarshal(body(task), &u); err != nil {
		return store.User{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if u.ID == "" || u.Email == "" {
		return store.User{}, fmt.Errorf("%w: id or email missing", errMalformed)
	}
	return store.User{ID: u.ID, Name: u.Name, Email: u.Email}, nil
}

// attemptRow is one delivery as a consumer saw it.
type attemptRow struct {
	task    string
	retries int           // the retry count the message carried (x-retries or qlab-retries)
	at      time.Duration // lesson time from the part's start
	err     error
	insert  bool // the delivery reached the database
}

// run is one part: a fresh backend with the topology declared, a users
// table, and a database that is down for a while from the part's first
// delivery (not its start: a broker takes a moment to deliver).
type run struct {
	env   *lesson.Env
	b     flow.Backend
	clock lab.Clock
	db    runstore.Opened
	down  func(task string) time.Duration // how long the DB is away for task's group
	first sync.Once                       // sets start
	start time.Duration                   // lesson time of the first delivery

	mu      sync.Mutex
	rows    []attemptRow
	offsets map[string]int           // x-retries a message was published with (part (c)'s copy)
	ends    map[string]flow.Decision // each message's last decision
}

// open starts part name's backend and users table.
func open(ctx context.Context, env *lesson.Env, name string,
	down func(string) time.Duration) (*run, error) {
	b, err := env.Open(ctx)
	if err != nil {
		return nil, err
	}
	if err := env.Declare(ctx, b, Topology()); err != nil {
		env.Close(ctx, b)
		return nil, err
	}
	db, err := runstore.Open(ctx, env, name)
	if err != nil {
		env.Close(ctx, b)
		return nil, err
	}
	clock := env.Stream.Clock()
	return &run{env: env, b: b, clock: clock, db: db, down: down,
		offsets: map[string]int{}, ends: map[string]flow.Decision{}}, nil
}

// close ends the backend and deletes the users table.
func (r *run) close(ctx context.Context) {
	r.env.Close(ctx, r.b)
	r.db.Drop()
}

// since is lesson time from the part's first delivery.
func (r *run) since() time.Duration {
	r.first.Do(func() { r.start = r.clock.Elapsed() })
	return r.clock.Elapsed() - r.start
}

// seedRetries is the x-retries the seed's consumer reads from d: absent
// (0) on a first delivery, one more on each republish. On the broker the
// seam reads the header itself (Consumer.RetryHeader); in memory the
// task's counter plays it. A message the lesson published with a count
// (part (c)) adds it.
func (r *run) seedRetries(d *flow.Delivery) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return d.Attempt - 1 + r.offsets[d.Task]
}

// ownRetries is the lab's qlab-retries on d, counted the same way.
func ownRetries(d *flow.Delivery) int { return d.Attempt - 1 }

// attempt runs one delivery of d by actor: stepTime, then insert's verdict,
// recorded in the stream and the part's rows. Whether the DB is away is
// read as the delivery begins (after its started event): a busy machine
// can stall a goroutine for a fraction of a real second, seconds of
// lesson time, and a fate must not hang on where in the delivery that
// stall fell (a broker run of part (e) once saved f-user at its first
// try: the stall came before its insert). The stream still bounds it:
// the moment lies between the delivery's started and its end.
func (r *run) attempt(ctx context.Context, d *flow.Delivery, actor string, retries int) error {
	var at time.Duration
	reached := false
	err := r.env.Stream.Attempt(d.Event(actor), func() error {
		at = r.since()
		if err := r.clock.Wait(ctx, stepTime); err != nil {
			return err
		}
		u, err := decode(d.Task)
		if err != nil {
			return err
		}
		reached = true
		return r.insert(ctx, d.Task, at, u)
	})
	r.mu.Lock()
	r.rows = append(r.rows, attemptRow{task: d.Task, retries: retries, at: at,
		err: err, insert: reached})
	r.mu.Unlock()
	return err
}

// insert is one INSERT of u by a delivery that began at: refused if the
// DB was down for task then.
func (r *run) insert(ctx context.Context, task string, at time.Duration, u store.User) error {
	if at < r.down(task) {
		return errDBDown
	}
	return r.db.InsertUsers(ctx, []store.User{u})
}

// tries is how many deliveries of task the part's consumers handled.
func (r *run) tries(task string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, row := range r.rows {
		n += btoi(row.task == task)
	}
	return n
}

// all is every delivery the part's consumers handled.
func (r *run) all() []attemptRow {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attemptRow(nil), r.rows...)
}

// publisher puts a part's messages on the broker.
type publisher func(context.Context) error

// viaAPI publishes each task to raffle_queue through raffle_exchange, as
// the API does.
func (r *run) viaAPI(tasks ...string) publisher {
	return r.via("API", raffle.Exchange, raffle.Queue, tasks...)
}

// via publishes each task, by actor, to exchange with key.
func (r *run) via(actor, exchange, key string, tasks ...string) publisher {
	return func(ctx context.Context) error {
		for _, t := range tasks {
			if err := r.b.PublishTo(ctx, actor, exchange, key, t); err != nil {
				return err
			}
		}
		return nil
	}
}

// reading is one way to read "max 3 attempts" against x-retries.
type reading struct {
	rule      string
	exhausted func(retries int) bool // reject to the DLQ instead of retrying
}

// The two readings of the seed's "attempts < 3: retry; attempts ≥ 3:
// reject" when x-retries starts absent.
var (
	attemptsReading = reading{rule: "attempt = x-retries+1; reject at attempt ≥ 3",
		exhausted: func(n int) bool { return n+1 >= MaxRetries }}
	retriesReading = reading{rule: "attempts = x-retries; reject at x-retries ≥ 3",
		exhausted: func(n int) bool { return n >= MaxRetries }}
)

// badBody decides on a delivery whose body is not a user (part (d)).
type badBody func(d *flow.Delivery, err error) flow.Decision

// seedConsumer is the RaffleAPI's Users.Consumer, one message at a time:
// insert; on a DB error republish into raffle_retry_10s with x-retries+1
// (the seam's Retry, counting in x-retries), or reject to the DLQ once
// read says the attempts are spent. Malformed JSON goes as bad says (part
// (d)'s two readings).
func (r *run) seedConsumer(read reading, bad badBody) flow.Consumer {
	// x-retries is the RaffleAPI's header, kept because this is the seed's
	// consumer; x- names are the broker's (Q13): the lab's own code counts
	// in rabbit.RetryCountHeader, as the fix in part (e) does.
	return flow.Consumer{Queue: raffle.Queue, Actor: "Consumer", RetryHeader: rabbit.RetriesHeader,
		Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
			retries := r.seedRetries(d)
			err := r.attempt(ctx, d, "Consumer", retries)
			switch {
			case err == nil:
				return flow.Ack()
			case errors.Is(err, errMalformed):
				return bad(d, err)
			case read.exhausted(retries):
				return flow.Park(raffle.DLQ, fmt.Sprintf("x-retries %d (%s): rejected via %s: %v",
					retries, read.rule, raffle.DLX, err))
			}
			return flow.Retry(raffle.RetryQueue, err)
		}}
}

// toDLQ is the seed's first reading of malformed JSON: "direct reject to
// DLQ".
func toDLQ(_ *flow.Delivery, err error) flow.Decision {
	return flow.Park(raffle.DLQ, "rejected at once, never retried: "+err.Error())
}

// consume starts cs, then publishes and waits until every message settles.
func (r *run) consume(ctx context.Context, cs []flow.Consumer, publish publisher) error {
	for _, c := range cs {
		if err := r.b.Consume(ctx, r.recorded(c)); err != nil {
			return err
		}
	}
	defer r.env.InterruptOn(r.b)()
	if err := publish(ctx); err != nil {
		return err
	}
	if err := r.b.Wait(ctx); err != nil {
		return err
	}
	return r.rowsMatch(ctx)
}

// rowsMatch checks the users table against the stream: one row for each
// message acked after its insert, none for any other. One case is named,
// not hidden: a message whose insert committed but whose ack was lost with
// its connection (a close or a restart from outside the lesson) comes back
// redelivered, its second insert fails on the duplicate, and it ends
// retried or parked with its row stored. The seed's insert is not
// idempotent; a phase line names those users.
func (r *run) rowsMatch(ctx context.Context) error {
	stored, err := r.db.CountUsers(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	acked, unacked := 0, []string(nil)
	for task, dec := range r.ends {
		switch {
		case dec.Action == flow.ActAck:
			acked++
		case r.committed(task):
			unacked = append(unacked, task)
		}
	}
	r.mu.Unlock()
	if len(unacked) > 0 {
		slices.Sort(unacked)
		r.env.Stream.Emit(lab.Event{Kind: lab.Phase, Actor: "lab", Note: fmt.Sprintf(
			"stored but not acked: %s. The insert committed, the ack was lost with the "+
				"connection, and the redelivered copy failed on the duplicate: the seed's "+
				"insert is not idempotent", strings.Join(unacked, ", "))})
	}
	if stored != acked+len(unacked) {
		return fmt.Errorf("q24: the users table holds %d rows, the consumers acked %d inserts "+
			"(and %d committed whose ack was lost)", stored, acked, len(unacked))
	}
	return nil
}

// committed reports whether one of task's deliveries inserted its user.
// r.mu must be held.
func (r *run) committed(task string) bool {
	for _, row := range r.rows {
		if row.task == task && row.insert && row.err == nil {
			return true
		}
	}
	return false
}

// recorded is c, its decisions kept in ends.
func (r *run) recorded(c flow.Consumer) flow.Consumer {
	handle := c.Handle
	c.Handle = func(ctx context.Context, d *flow.Delivery) flow.Decision {
		dec := handle(ctx, d)
		r.mu.Lock()
		r.ends[d.Task] = dec
		r.mu.Unlock()
		return dec
	}
	return c
}

// end says where task's last decision sent it.
func (r *run) end(task string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	dec, ok := r.ends[task]
	switch {
	case !ok:
		return "never delivered"
	case dec.Action == flow.ActAck:
		return "inserted, acked"
	case dec.Action == flow.ActPark:
		return "in " + dec.To
	case dec.Action == flow.ActDrop:
		return "discarded"
	case dec.Action == flow.ActRetry:
		return "retrying via " + dec.To
	}
	return "requeued"
}

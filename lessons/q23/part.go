package q23

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/seeds/raffle"
	"github.com/queuelab/qlab/store"
)

// part is one run of the batching consumer on a backend of its own and the
// lesson's users table, and what it measured.
type part struct {
	Title    string
	Prefix   string        // its users' ids: l01, l02, …
	Users    int           // how many users the API publishes
	Every    time.Duration // between two publishes; 0: all at once
	Prefetch int           // each batcher's prefetch; 0: the batch size
	// Poisoned makes the middle user register Taken's email again.
	Poisoned bool
	// Seed handles a failed insert the seed's way: the batch fails whole.
	// Unset, each message is settled on its own (the fix).
	Seed bool
	// OneBatcher runs one batcher, so that every round of retries is one
	// batch on either backend.
	OneBatcher bool
	// Wait is the batch timeout; 0: BatchWait.
	Wait time.Duration
	// Batch is the batch size; 0: BatchSize.
	Batch int

	users map[string]store.User // by task
	on    string                // the mechanism it ran on (flow.Facts.On)

	mu        sync.Mutex
	start     time.Duration            // lesson time of the first publish
	published map[string]time.Duration // task → publish, from start
	inserted  map[string]time.Duration // task → its insert committed, from start
	parked    map[string]string        // task → why it was parked
	attempts  map[string]int           // task → deliveries seen
	batches   []int                    // the size of each insert
	added     int                      // rows the table gained during the part
}

// user is the i-th user (from 1) of p: the middle one of a poisoned part
// registers Taken's email again.
func (p *part) user(i int) store.User {
	id := fmt.Sprintf("%s%02d", p.Prefix, i)
	u := store.User{ID: id, Name: "User " + id, Email: id + "@email.com"}
	if p.Poisoned && i == (p.Users+1)/2 {
		u.Email = Taken.Email
	}
	return u
}

// run starts the batchers on a fresh backend, publishes the users as the
// API does, one every p.Every, and waits until every one is settled.
func (p *part) run(ctx context.Context, env *lesson.Env, db store.Users) error {
	p.users, p.parked, p.attempts = map[string]store.User{}, map[string]string{}, map[string]int{}
	p.published, p.inserted = map[string]time.Duration{}, map[string]time.Duration{}
	before, err := db.CountUsers(ctx)
	if err != nil {
		return err
	}
	b, err := env.Open(ctx)
	if err != nil {
		return err
	}
	defer env.Close(ctx, b)
	p.on = flow.FactsOf(b).On()
	if err := p.consume(ctx, env, b, db); err != nil {
		return err
	}
	defer env.InterruptOn(b)()
	if err := p.publish(ctx, env, b); err != nil {
		return err
	}
	if err := b.Wait(ctx); err != nil {
		return err
	}
	after, err := db.CountUsers(ctx)
	p.added = after - before
	return err
}

// consume declares the seed's topology (qlab serve's) and starts the
// batchers, one after the other so that they take turns in a fixed order.
func (p *part) consume(ctx context.Context, env *lesson.Env, b flow.Backend, db store.Users) error {
	if err := env.Declare(ctx, b, raffle.Topology()); err != nil {
		return err
	}
	batcher, ok := b.(flow.Batcher)
	if !ok {
		return fmt.Errorf("%s cannot deliver in batches", b.Kind())
	}
	n := Batchers
	if p.OneBatcher {
		n = 1
	}
	for i := range n {
		c := flow.Consumer{Queue: raffle.Queue, Actor: actor(i), Prefetch: p.Prefetch, RetryHeader: p.header()}
		err := batcher.ConsumeBatch(ctx, c, flow.Batch{Size: p.size(), Wait: p.wait(),
			KeepPrefetch: p.Prefetch > 0, Handle: p.handler(env, db, actor(i))})
		if err != nil {
			return err
		}
		if err := clockOf(env).Wait(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// size is p's batch size.
func (p *part) size() int {
	if p.Batch > 0 {
		return p.Batch
	}
	return BatchSize
}

// wait is p's batch timeout.
func (p *part) wait() time.Duration {
	if p.Wait > 0 {
		return p.Wait
	}
	return BatchWait
}

// publish is the API: each user through raffle_exchange to raffle_queue.
func (p *part) publish(ctx context.Context, env *lesson.Env, b flow.Backend) error {
	clock := clockOf(env)
	p.start = clock.Elapsed()
	for i := 1; i <= p.Users; i++ {
		if i > 1 && p.Every > 0 {
			if err := clock.Wait(ctx, p.Every); err != nil {
				return err
			}
		}
		u := p.user(i)
		p.mu.Lock()
		p.users[u.ID] = u
		p.published[u.ID] = clock.Elapsed() - p.start
		p.mu.Unlock()
		if err := b.PublishTo(ctx, "RaffleAPI", raffle.Exchange, raffle.Queue, u.ID); err != nil {
			return err
		}
	}
	return nil
}

// handler is one batcher: the processors turn each message into a user,
// the batch is inserted, and each message gets its decision.
func (p *part) handler(env *lesson.Env, db store.Users, actor string) flow.BatchHandler {
	return func(ctx context.Context, ds []*flow.Delivery) []flow.Decision {
		users, errs := p.process(ds)
		failed := p.insert(ctx, db, users, errs)
		p.mu.Lock()
		p.batches = append(p.batches, len(ds))
		p.mu.Unlock()
		decs := make([]flow.Decision, len(ds))
		for i, d := range ds {
			err := env.Stream.Attempt(d.Event(actor), func() error { return failed[i] })
			p.settled(d, err, clockOf(env).Elapsed()-p.start)
			decs[i] = policy.Decide(d, err)
			if decs[i].Action == flow.ActPark && !flow.IsPermanent(err) {
				decs[i].Reason += ", the last with " + err.Error()
			}
			if decs[i].Action == flow.ActPark {
				p.mu.Lock()
				p.parked[d.Task] = decs[i].Reason
				p.mu.Unlock()
			}
		}
		return decs
	}
}

// errUnknown is a message the processors cannot read: no retry fixes it.
var errUnknown = flow.Permanent(errors.New("malformed: not a user the API published"))

// process is Broadway's processor stage: up to Processors messages decoded
// at once. Here the seam hands the batcher whole batches, so the
// processors run inside it, before the insert.
func (p *part) process(ds []*flow.Delivery) ([]store.User, []error) {
	users, errs := make([]store.User, len(ds)), make([]error, len(ds))
	slots := make(chan struct{}, Processors)
	var wg sync.WaitGroup
	for i, d := range ds {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			p.mu.Lock()
			u, ok := p.users[d.Task]
			p.mu.Unlock()
			users[i] = u
			if !ok {
				errs[i] = errUnknown
			}
		})
	}
	wg.Wait()
	return users, errs
}

// insert stores the readable users and returns each message's error: the
// seed's insert fails them all with the batch; the fix's skips the rows
// whose email is taken, and only those fail, permanently.
func (p *part) insert(ctx context.Context, db store.Users, users []store.User,
	errs []error) []error {
	var ok []int
	for i, err := range errs {
		if err == nil {
			ok = append(ok, i)
		}
	}
	batch := make([]store.User, len(ok))
	for j, i := range ok {
		batch[j] = users[i]
	}
	if p.Seed {
		if err := db.InsertUsers(ctx, batch); err != nil {
			for _, i := range ok {
				errs[i] = fmt.Errorf("db_error: the batch of %d failed: %w", len(batch), err)
			}
		}
		return errs
	}
	skipped, err := db.InsertUsersSkipping(ctx, batch)
	for j, i := range ok {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("db_error: %w", err)
		case slices.Contains(skipped, j):
			errs[i] = flow.Permanent(fmt.Errorf("email %s is taken: %w", users[i].Email,
				store.ErrDuplicate))
		}
	}
	return errs
}

// settled records d's attempt: its insert time when it was stored.
func (p *part) settled(d *flow.Delivery, err error, at time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts[d.Task] = max(p.attempts[d.Task], d.Attempt)
	if err == nil {
		p.inserted[d.Task] = at
	}
}

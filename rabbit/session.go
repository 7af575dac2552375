package rabbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/created"
)

// opTimeout bounds one broker round trip (declare, delete, confirm) when
// the caller's context has no earlier deadline. A loaded broker answers
// late, not never: with both cores of a 2-core machine busy, 3.10.8 once
// answered nothing for 5.6 s (ci74, 2026-11-27), and at 5 s every run
// waiting on it then failed.
const opTimeout = 10 * time.Second

// Session is one run's link to the broker: a connection for declaring,
// publishing and cleaning up, the run's queue Names and the lesson Clock
// that scales TTLs. Consumers get connections of their own and recover
// from a drop, and so does the session's: a loss is logged, and the next
// declare, publish or clean-up dials a new connection (see live).
// Create it with Open; Close deletes every queue the session created.
//
// A session owns only what it created: Topo.Declare refuses queues that
// already exist, so a run never consumes, drains or deletes someone
// else's queue.
//
// Session itself is the link (link.go, health.go, retry.go): the
// connection, replaced after a loss, whether the run can go on (Err), and
// what lessons do on it (Dial, Retry, OnConnection, Consume, Publisher).
// Its other concerns are types of their own, reached through accessors:
//   - Topo (declare.go, exchange.go, left.go): declaring the run's queues
//     and exchanges, and deleting them again;
//   - Guest (claim.go, screen.go, foreign.go, seal.go): being a guest on a
//     shared broker: the claim on the names, screening out what is no task
//     of the run, and the hold queue;
//   - Watch (expect.go, settle.go): when the run is settled or stalled;
//   - Probes (returns.go, unroutable.go): one-off experiments that show what
//     the broker does.
//
// Each part's state has a lock of its own, taken only to read or change
// that state and never while calling the broker or holding another
// part's lock, with two exceptions: link.mu is held while live dials
// (and re-claims the names), and health.mu is a leaf that may be taken
// under it; screening.pubMu, see screening. The exported fields are
// settings: set them before use.
type Session struct {
	URL    string
	Names  Names
	Clock  lab.Clock
	Logger *slog.Logger // connection trouble is logged here; never nil after Open
	// Patience bounds WaitSettled: how much lesson time may pass without
	// any task making progress, once the last wait the run scheduled has
	// ended (Expect), before the run is given up. 0 means minPatience.
	// Either way it is at least minRealPatience of real time.
	Patience time.Duration
	// GiveUpAfter bounds how long the session waits for a broker that
	// went away (Retry) before the run is given up; 0 means
	// DefaultGiveUpAfter. Set it before the first Consume.
	GiveUpAfter time.Duration
	// Keep leaves the queues the session created, and what they hold, on
	// the broker at Close (qlab run --keep). They are still the run's: its
	// names carry its prefix, and qlab broker clean --prefix removes them.
	Keep bool
	// Quorum declares every queue of the session as a quorum queue
	// (x-queue-type quorum), whatever its topology says: a classic lesson
	// run on a cluster (lesson.Options.Quorum; the fault suite stops its
	// main queue's leader). Set it before the first Declare.
	Quorum bool
	// Observe, when set, sees every delivery of the run's tasks that a
	// reader of the session accepted (Screen), before it is handled: qlab
	// compare --broker reads the headers each broker put on it (x-death,
	// x-delivery-count). It runs on the reader's goroutine, so it must be
	// safe for concurrent use and must not keep d's body. Set it before
	// the first Consume.
	Observe func(queue string, d amqp.Delivery)
	// Channels, when set, sees each consumer channel the session opens
	// (true) and each that goes away (false: cut, closed by the broker, or
	// closed when the run ends): seed 003's queue_channel_opens_total and
	// queue_channel_closes_total (Q22). It runs on the consumer's
	// goroutine, so it must be safe for concurrent use. Set it before the
	// first Consume.
	Channels func(opened bool)

	link    link
	health  health
	settled atomic.Bool // a Close left nothing behind (created.Closed)
	warns   warnings
	topo    Topo
	guest   Guest
	watch   Watch
	probe   Probes
}

// newSession is a session with its parts wired to it and no connection
// yet: Open dials one. Every Session is made here, so no part is without
// its session.
func newSession(url string, names Names, clock lab.Clock, logger *slog.Logger) *Session {
	s := &Session{URL: url, Names: names, Clock: clock, Logger: logger}
	s.link.s, s.topo.s, s.guest.s, s.watch.s, s.probe.s = s, s, s, s, s
	s.health.failed = make(chan struct{})
	return s
}

// Topo is the session's declare-and-clean part.
func (s *Session) Topo() *Topo { return &s.topo }

// Guest is the session's part for sharing a broker with others: the
// claim, screening and the hold queue.
func (s *Session) Guest() *Guest { return &s.guest }

// Watch is the session's part that tells when the run settled or stalled.
func (s *Session) Watch() *Watch { return &s.watch }

// Probes is the session's part for one-off experiments on the broker.
func (s *Session) Probes() *Probes { return &s.probe }

// health is whether the run can go on and what keeps it busy. mu guards
// every field; failed is closed (once) by fail, so waits can select on it.
type health struct {
	mu        sync.Mutex
	failure   error         // why the run cannot go on; see fail
	failed    chan struct{} // closed by fail
	retrying  int           // Retry loops waiting for the broker (see busyRetrying)
	consumers []*Consumer
}

// warnings throttles repeated warnings (Warn). mu guards seen.
type warnings struct {
	mu   sync.Mutex
	seen map[string]warnState // by message: when it was last logged, how many since
}

// warnState is one repeated warning's throttle: when it was last logged
// and how many were held back since.
type warnState struct {
	at   time.Time
	held int
}

// warnEvery is how often one kind of warning is logged while it repeats
// (a broker that stays down makes every consumer's redial fail each
// second: without it, four lines a second for Q10's workers).
const warnEvery = 5 * time.Second

// Warn logs msg as a warning at most once per warnEvery; the next one
// logged says how many were held back in between. Consumers and
// publishers of the session report connection trouble through it.
func (s *Session) Warn(msg string, args ...any) {
	s.warns.mu.Lock()
	if s.warns.seen == nil {
		s.warns.seen = map[string]warnState{}
	}
	w := s.warns.seen[msg]
	if time.Since(w.at) < warnEvery {
		w.held++
		s.warns.seen[msg] = w
		s.warns.mu.Unlock()
		return
	}
	s.warns.seen[msg] = warnState{at: time.Now()}
	s.warns.mu.Unlock()
	args = append(args, "run", s.Names.Run)
	if w.held > 0 {
		args = append(args, "repeats_held_back", w.held)
	}
	s.Logger.Warn(msg, args...)
}

// Open connects to the broker at url within a few seconds and ctx. names
// picks the queue names (RunNames for a private prefix, SeedNames or
// PersonNames for the seed's); a names without a Run gets a fresh one.
// clock scales TTLs. logger gets connection trouble: the caller's (the
// run API passes the front end's); nil logs nothing, never a global.
func Open(ctx context.Context, url string, names Names, clock lab.Clock, logger *slog.Logger) (*Session, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if names.Run == "" {
		names.Run = newRunID()
	}
	conn, err := dialAs(ctx, url, ConnectionName(names), nil)
	if err != nil {
		return nil, err
	}
	s := newSession(url, names, clock, logger)
	s.link.conn = conn
	go s.link.logClose(conn)
	created.Opened(s.Names.bare())
	return s, nil
}

// Sibling opens another session to the same broker, under the same
// names, clock, logger and GiveUpAfter: a second process of the same run
// (a scheduler with a connection of its own).
// The broker answered this session, so one that does not answer now is
// waited for (Retry).
func (s *Session) Sibling(ctx context.Context) (*Session, error) {
	var sib *Session
	err := s.Retry(ctx, "opening another connection", func() (err error) {
		sib, err = Open(ctx, s.URL, s.Names, s.Clock, s.Logger)
		return err
	})
	if err != nil {
		return nil, err
	}
	sib.GiveUpAfter, sib.Quorum = s.GiveUpAfter, s.Quorum
	return sib, nil
}

// OpenAgain is Open for a run that reached the broker before (a lesson's
// later part, after discovery found the broker): a broker that does not
// answer now (a loaded one, past a dial's few seconds) or refuses the
// connection (a restarting one) is waited for as Retry waits, for at most
// giveUpAfter (0 means DefaultGiveUpAfter). A refusal of the request
// itself (credentials, vhost, URL) fails at once, as with Open.
func OpenAgain(ctx context.Context, url string, names Names, clock lab.Clock, logger *slog.Logger, giveUpAfter time.Duration) (*Session, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	waiter := newSession(url, names, clock, logger) // holds the retry's warnings; never dials
	waiter.GiveUpAfter = giveUpAfter
	var s *Session
	err := waiter.Retry(ctx, "connecting to the broker", func() (err error) {
		s, err = Open(ctx, url, names, clock, logger)
		return err
	})
	return s, err
}

// ConnectionName is the name every connection of a run with names carries
// ("qlab qlab-3f9a1c"): the broker lists it (rabbitmqctl list_connections
// client_properties, the management UI), so one run's connections can be
// told apart and closed alone.
func ConnectionName(names Names) string { return "qlab " + names.Run }

// Close stops the session's consumers, holds what no task of the run left
// in its queues (holdLeftovers), deletes every queue the session created
// (a queue already gone counts as deleted; none under Keep) and closes the
// connection, each step bounded by ctx. The hold queue stays when it holds
// foreign messages: they were never the run's to delete. If the session's
// connection was lost, Close dials a new one to clean up, waiting for a
// broker that is away for as long as ctx allows (even after the run gave
// it up). It returns the first error; what it could not delete, Left
// lists and TidyLeft tries again.
func (s *Session) Close(ctx context.Context) error {
	ctx = cleaning(ctx)
	s.health.mu.Lock()
	consumers := s.health.consumers
	s.health.consumers = nil
	s.health.mu.Unlock()
	for _, c := range consumers {
		c.Stop()
	}
	if !s.Keep { // kept queues keep whatever they hold: nothing is deleted with them
		s.guest.holdLeftovers(ctx)
	}
	s.guest.screen.mu.Lock()
	holdPub := s.guest.screen.pub
	s.guest.screen.pub = nil
	s.guest.screen.mu.Unlock()
	if holdPub != nil {
		_ = holdPub.Close()
	}
	s.topo.owned.mu.Lock()
	declared := s.topo.owned.declared
	s.topo.owned.declared = nil
	s.topo.owned.mu.Unlock()
	var first error
	switch {
	case s.Keep:
		s.topo.owned.mu.Lock()
		s.topo.owned.kept = declared
		s.topo.owned.mu.Unlock()
	case len(declared) > 0:
		first = s.topo.deleteOwned(ctx, declared)
	}
	if err := s.link.closeConn(); first == nil && err != nil && !errors.Is(err, amqp.ErrClosed) {
		first = err
	}
	if first == nil && s.leftNothing() && s.settled.CompareAndSwap(false, true) {
		created.Closed(s.Names.bare()) // once per Opened: make test's closing clean need not look under it
	}
	return first
}

// leftNothing says whether the session's Close left nothing of its own on
// the broker: nothing it kept (Keep), nothing it failed to delete (Left)
// and no hold queue, which it keeps while that holds messages.
func (s *Session) leftNothing() bool {
	queues, exchanges := s.topo.Left()
	s.guest.screen.mu.Lock()
	held := s.guest.screen.held
	s.guest.screen.mu.Unlock()
	return !s.Keep && len(queues)+len(exchanges) == 0 && held == 0
}

// within runs f, returning its error, or ctx's (or opTimeout's) error if f
// has not returned by then. amqp091-go's synchronous methods take no
// context; a stuck f is abandoned to finish on its own when its
// connection closes. f must not write variables the caller reads: return
// results through withinValue instead.
func within(ctx context.Context, f func() error) error {
	_, err := withinValue(ctx, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// withinValue is within for an f that returns a value: the value is handed
// over only when f finished in time, so an abandoned f races with no one.
func withinValue[T any](ctx context.Context, f func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil { // never start a call nobody will wait for
		var zero T
		return zero, fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%w: %w", ErrNoAnswer, ctx.Err())
	}
}

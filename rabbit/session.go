package rabbit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
)

// opTimeout bounds one broker round trip (declare, delete, confirm) when
// the caller's context has no earlier deadline.
const opTimeout = 5 * time.Second

// Session is one run's link to the broker: a connection for declaring,
// publishing and cleaning up, the run's queue Names and the lesson Clock
// that scales TTLs. Consumers get connections of their own and recover
// from a drop, and so does the session's: a loss is logged, and the next
// declare, publish or clean-up dials a new connection (see live).
// Create it with Open; Close deletes every queue the session created.
//
// A session owns only what it created: Declare refuses queues that already
// exist, so a run never consumes, drains or deletes someone else's queue.
type Session struct {
	URL    string
	Names  Names
	Clock  lab.Clock
	Logger *slog.Logger // connection trouble is logged here; never nil after Open
	// Patience bounds WaitSettled: how much lesson time may pass without
	// any task making progress before the run is given up. 0 means
	// patienceFactor times the longest TTL declared, at least minPatience.
	Patience time.Duration
	// GiveUpAfter bounds how long the session's consumers and publishers
	// keep redialling a broker that went away before the run is given up;
	// 0 means DefaultGiveUpAfter. Set it before the first Consume.
	GiveUpAfter time.Duration
	// Keep leaves the queues the session created, and what they hold, on
	// the broker at Close (qlab run --keep). They are still the run's: its
	// names carry its prefix, and qlab broker clean --prefix removes them.
	Keep bool
	kept []string // the queues Close left under Keep

	connMu sync.Mutex // guards conn and closed
	conn   *amqp.Connection
	closed bool // Close has run: live dials no more

	mu        sync.Mutex
	declared  []string // broker names of the queues this session created, in order
	longest   time.Duration
	consumers []*Consumer
	failure   error         // why the run cannot go on; see fail
	failed    chan struct{} // closed by fail
	foreign   int
	parking   int        // parks under way (see parkActivity)
	retrying  int        // publishes waiting out a lost channel, tries waiting for the broker (Publisher.confirmed, awaitBroker)
	holdPub   *Publisher // publishes to the hold queue; nil until the first foreign message
	holdMu    sync.Mutex // serialises creating holdPub

	warnMu sync.Mutex
	warned map[string]warnState // by message: when it was last logged, how many since
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
	s.warnMu.Lock()
	if s.warned == nil {
		s.warned = map[string]warnState{}
	}
	w := s.warned[msg]
	if time.Since(w.at) < warnEvery {
		w.held++
		s.warned[msg] = w
		s.warnMu.Unlock()
		return
	}
	s.warned[msg] = warnState{at: time.Now()}
	s.warnMu.Unlock()
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
	s := &Session{URL: url, Names: names, Clock: clock, Logger: logger, conn: conn, failed: make(chan struct{})}
	go s.logClose(conn)
	return s, nil
}

// Sibling opens another session to the same broker, under the same
// names, clock, logger and GiveUpAfter: a second process of the same run
// (a scheduler with a connection of its own).
// The broker answered this session, so one that does not answer now is
// waited for (awaitBroker).
func (s *Session) Sibling(ctx context.Context) (*Session, error) {
	var sib *Session
	err := s.awaitBroker(ctx, "opening another connection", func() (err error) {
		sib, err = Open(ctx, s.URL, s.Names, s.Clock, s.Logger)
		return err
	})
	if err != nil {
		return nil, err
	}
	sib.GiveUpAfter = s.GiveUpAfter
	return sib, nil
}

// awaitBroker runs try until it succeeds or fails other than with the
// broker away (brokerAway): mid-run, a broker that does not answer is
// restarting or gone, and is waited for as a lost connection is, with a
// doubling pause, for at most GiveUpAfter (which fails the session), until
// ctx ends or the session fails. The run counts as moving meanwhile
// (WaitSettled).
func (s *Session) awaitBroker(ctx context.Context, what string, try func() error) error {
	giveUp := time.Now().Add(s.giveUpAfter())
	pause := reconnectPause
	for waiting := false; ; {
		err := try()
		if err == nil || !brokerAway(err) || ctx.Err() != nil {
			return err
		}
		if time.Now().After(giveUp) {
			err = fmt.Errorf("%s: the broker stayed away for %v: %w", what, s.giveUpAfter(), err)
			s.fail(err)
			return err
		}
		if !waiting {
			waiting = true
			s.busyRetrying(1)
			defer s.busyRetrying(-1)
		}
		s.Warn("rabbit: the broker is away; trying again", "what", what, "err", err.Error())
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return err
		case <-s.failed:
			return fmt.Errorf("%s: %w", what, s.Err())
		}
		pause = min(2*pause, time.Second)
	}
}

// brokerAway reports an error that says the broker could not be reached
// or dropped the connection (a restart, a node stopping), not that it
// refused the request.
func brokerAway(err error) bool {
	var dial *DialError
	var amqpErr *amqp.Error
	switch {
	case errors.As(err, &dial):
		return dial.transient()
	case errors.As(err, &amqpErr):
		return amqpErr.Code == amqp.ConnectionForced || amqpErr.Code == amqp.ChannelError
	}
	return false
}

// giveUpAfter is GiveUpAfter or its default.
func (s *Session) giveUpAfter() time.Duration { return cmp.Or(s.GiveUpAfter, DefaultGiveUpAfter) }

// ConnectionName is the name every connection of a run with names carries
// ("qlab qlab-3f9a1c"): the broker lists it (rabbitmqctl list_connections
// client_properties, the management UI), so one run's connections can be
// told apart and closed alone.
func ConnectionName(names Names) string { return "qlab " + names.Run }

// logClose drains the connection's close notification and logs a close
// the session did not ask for.
func (s *Session) logClose(conn *amqp.Connection) {
	if err, ok := <-conn.NotifyClose(make(chan *amqp.Error, 1)); ok && err != nil {
		s.Logger.Warn("rabbit: session connection lost", "url", Redact(s.URL), "err", err.Error())
	}
}

// Connection returns the session's current connection (e.g. for
// ServerVersion); it may have closed since.
func (s *Session) Connection() *amqp.Connection {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.conn
}

// live returns the session's connection, dialling a new one within ctx if
// the broker closed it (close_all_connections, a restart, a network cut),
// so a run's declares, publishes and clean-up outlive a drop.
func (s *Session) live(ctx context.Context) (*amqp.Connection, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if !s.conn.IsClosed() {
		return s.conn, nil
	}
	if s.closed { // a late probe (a depth sample) must not dial a connection nobody closes
		return nil, amqp.ErrClosed
	}
	conn, err := dialAs(ctx, s.URL, ConnectionName(s.Names), nil)
	if err != nil {
		return nil, err
	}
	s.Logger.Info("rabbit: session reconnected", "url", Redact(s.URL))
	s.conn = conn
	go s.logClose(conn)
	return conn, nil
}

// channel opens a channel on the session's live connection.
func (s *Session) channel(ctx context.Context) (*amqp.Channel, error) {
	conn, err := s.live(ctx)
	if err != nil {
		return nil, err
	}
	return conn.Channel()
}

// fail records why the run cannot go on (a consumed queue was deleted, the
// broker stayed away); the first reason wins. WaitSettled returns it.
func (s *Session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure == nil {
		s.failure = err
		close(s.failed)
	}
}

// Err is why the run cannot go on, or nil.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// PreconditionError explains a 406 PRECONDITION_FAILED: the queue already
// exists on the broker with other arguments than this run declares.
type PreconditionError struct {
	Queue  string // broker name
	Detail string // the broker's reply text
}

// ResetCommand is the shell command that deletes that one queue.
func (e *PreconditionError) ResetCommand() string { return "rabbitmqctl delete_queue " + e.Queue }

// Error says what happened, why, and how to reset it, on one line.
func (e *PreconditionError) Error() string {
	return fmt.Sprintf("queue %s already exists on the broker with other arguments than this run declares (%s): "+
		"an earlier run with other settings (e.g. another --speed with --names exact) left it behind; "+
		"if it is yours, reset it and run again: %s", e.Queue, e.Detail, e.ResetCommand())
}

// ExistsError means queues the run would declare already exist on the
// broker. The run did not create them, so it neither uses nor deletes
// them: it refuses to start.
type ExistsError struct {
	Queues []string // broker names, in topology order
	// Conflict explains the first of them that exists with other
	// arguments (a 406), or is nil; errors.As finds it.
	Conflict *PreconditionError
}

// ResetCommand deletes exactly the queues in the way.
func (e *ExistsError) ResetCommand() string {
	cmds := make([]string, len(e.Queues))
	for i, q := range e.Queues {
		cmds[i] = "rabbitmqctl delete_queue " + q
	}
	return strings.Join(cmds, "; ")
}

// Error names the queues and the command that removes them, on one line.
func (e *ExistsError) Error() string {
	msg, it, is := fmt.Sprintf("queue %s already exists on the broker", strings.Join(e.Queues, ", ")), "it", "it is"
	if len(e.Queues) > 1 {
		msg, it, is = fmt.Sprintf("queues %s already exist on the broker", strings.Join(e.Queues, ", ")), "them", "they are"
	}
	if e.Conflict != nil {
		msg += fmt.Sprintf(" (%s with other arguments: %s)", e.Conflict.Queue, e.Conflict.Detail)
	}
	return msg + fmt.Sprintf(": this run did not create %[1]s, so it leaves %[1]s alone and does not start "+
		"(another person's run, or one that crashed, may be using %[1]s); if %[2]s yours, remove %[1]s: ", it, is) + e.ResetCommand()
}

// Unwrap returns the 406 explanation, if any.
func (e *ExistsError) Unwrap() error {
	if e.Conflict == nil {
		return nil
	}
	return e.Conflict
}

// Declare declares every queue of t as durable, with its TTL and
// dead-letter route, and remembers it for Close. If any of them already
// exists it declares none and returns an *ExistsError (wrapping a
// *PreconditionError when one exists with other arguments).
func (s *Session) Declare(ctx context.Context, t Topology) error {
	if err := t.Check(); err != nil {
		return err
	}
	if err := checkTTLs(t, s.Clock); err != nil {
		return err
	}
	if err := s.refuseExisting(ctx, t); err != nil {
		return err
	}
	for _, q := range t.Queues {
		if err := s.declare(ctx, q.Name, Arguments(q, s.Names, s.Clock)); err != nil {
			return err
		}
		s.mu.Lock()
		s.longest = max(s.longest, q.TTL)
		s.mu.Unlock()
	}
	return nil
}

// MinRealTTL is the shortest real x-message-ttl a lesson may ask of the
// broker: below a few milliseconds its expiry timer and delivery (about
// 2 ms on the project's machines, see qlab broker latency) outweigh the
// wait, and "wait 1 s, then 2 s" stops being what the broker does.
const MinRealTTL = 5 * time.Millisecond

// SpeedError means the lesson clock is too fast for a queue's TTL: it
// would be under MinRealTTL of real time.
type SpeedError struct {
	Queue    string        // seed name
	TTL      time.Duration // lesson time
	Speed    float64
	MaxSpeed float64 // the highest speed at which that TTL stays meaningful
}

// Error names the queue, both times and the speed that works.
func (e *SpeedError) Error() string {
	return fmt.Sprintf("--speed %g is too fast for the broker: %s's TTL of %v (lesson time) would be %v real, under the %v "+
		"the broker's expiry needs to mean what the lesson says; use --speed %g or less",
		e.Speed, e.Queue, e.TTL, time.Duration(float64(e.TTL)/e.Speed).Round(time.Microsecond), MinRealTTL, e.MaxSpeed)
}

// checkTTLs returns a *SpeedError for the first queue of t whose TTL at
// clock's speed is under MinRealTTL.
func checkTTLs(t Topology, clock lab.Clock) error {
	for _, q := range t.Queues {
		if q.TTL > 0 && clock.Real(q.TTL) < MinRealTTL {
			return &SpeedError{Queue: q.Name, TTL: q.TTL, Speed: clock.Speed(), MaxSpeed: math.Floor(float64(q.TTL) / float64(MinRealTTL))}
		}
	}
	return nil
}

// refuseExisting returns an *ExistsError naming every queue of t that is
// already on the broker (a passive declare finds them). It re-declares an
// existing queue with t's arguments only to tell whether they differ: that
// changes nothing on the broker either way.
func (s *Session) refuseExisting(ctx context.Context, t Topology) error {
	var found ExistsError
	for _, q := range t.Queues {
		name := s.Names.Of(q.Name)
		exists, err := s.exists(ctx, name)
		if err != nil {
			return fmt.Errorf("checking queue %s: %w", name, err)
		}
		if !exists {
			continue
		}
		found.Queues = append(found.Queues, name)
		var pe *PreconditionError
		if err := s.queueDeclare(ctx, name, Arguments(q, s.Names, s.Clock)); errors.As(err, &pe) && found.Conflict == nil {
			found.Conflict = pe
		}
	}
	if len(found.Queues) > 0 {
		return &found
	}
	return nil
}

// exists reports whether broker queue name exists (a passive declare; the
// 404 for a missing queue closes only its own channel).
func (s *Session) exists(ctx context.Context, name string) (bool, error) {
	_, err := s.inspect(ctx, name)
	if isNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// inspect passively declares broker queue name on a channel of its own.
func (s *Session) inspect(ctx context.Context, name string) (amqp.Queue, error) {
	conn, err := s.live(ctx)
	if err != nil {
		return amqp.Queue{}, err
	}
	return inspectOn(ctx, conn, name)
}

// inspectOn is inspect on connection conn.
func inspectOn(ctx context.Context, conn *amqp.Connection, name string) (amqp.Queue, error) {
	return withinValue(ctx, func() (amqp.Queue, error) {
		ch, err := conn.Channel()
		if err != nil {
			return amqp.Queue{}, err
		}
		defer ch.Close()
		return ch.QueueDeclarePassive(name, true, false, false, false, nil)
	})
}

// isNotFound reports a 404 NOT_FOUND from the broker.
func isNotFound(err error) bool {
	var amqpErr *amqp.Error
	return errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound
}

// declare declares one durable queue of the session's topology and
// records it for deletion at Close.
func (s *Session) declare(ctx context.Context, seedName string, args amqp.Table) error {
	name := s.Names.Of(seedName)
	if err := s.queueDeclare(ctx, name, args); err != nil {
		var pre *PreconditionError
		if errors.As(err, &pre) {
			return err // created between our check and now, by someone else: not ours
		}
		return fmt.Errorf("declaring queue %s: %w", name, err)
	}
	s.mu.Lock()
	s.declared = append(s.declared, name)
	s.mu.Unlock()
	return nil
}

// Redeclare declares queue q again exactly as Declare would, without
// recording it. The broker accepts it only if the queue's arguments are
// equivalent, so this reads the declared arguments back by behaviour.
func (s *Session) Redeclare(ctx context.Context, q Queue, args amqp.Table) error {
	if args == nil {
		args = Arguments(q, s.Names, s.Clock)
	}
	return s.queueDeclare(ctx, s.Names.Of(q.Name), args)
}

// queueDeclare declares durable queue name on a channel of its own (a 406
// closes the channel it happens on, and the session must stay usable) and
// turns a 406 PRECONDITION_FAILED into a *PreconditionError.
func (s *Session) queueDeclare(ctx context.Context, name string, args amqp.Table) error {
	err := within(ctx, func() error {
		ch, err := s.channel(ctx)
		if err != nil {
			return err
		}
		defer ch.Close()
		_, err = ch.QueueDeclare(name, true, false, false, false, args)
		return err
	})
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.PreconditionFailed {
		return &PreconditionError{Queue: name, Detail: amqpErr.Reason}
	}
	return err
}

// Depth returns how many messages are ready in seed queue name (a passive
// declare: it fails if the queue does not exist).
func (s *Session) Depth(ctx context.Context, name string) (int, error) {
	q, err := s.inspect(ctx, s.Names.Of(name))
	return q.Messages, err
}

// InterruptConsumers cuts every consumer's connection at once, as a killed
// worker process would (see Consumer.Interrupt): what they held unacked
// goes back to its queue, messages waiting in the broker stay, and each
// consumer reconnects.
func (s *Session) InterruptConsumers() {
	s.mu.Lock()
	consumers := append([]*Consumer(nil), s.consumers...)
	s.mu.Unlock()
	cut := fmt.Sprintf("%d consumer connections", len(consumers))
	if len(consumers) == 1 {
		cut = "1 consumer connection"
	}
	s.Logger.Info("rabbit: planned interruption: " + cut + " cut; the consumers reconnect")
	for _, c := range consumers {
		c.Interrupt()
	}
}

// Close stops the session's consumers, deletes every queue the session
// created (a queue already gone counts as deleted; none when Keep is set)
// and closes the connection, each step bounded by ctx. The hold queue stays when it holds
// foreign messages: they were never the run's to delete. If the session's
// connection was lost, Close dials a new one to clean up. It returns the
// first error.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	consumers, declared, holdPub := s.consumers, s.declared, s.holdPub
	s.consumers, s.declared, s.holdPub = nil, nil, nil
	s.mu.Unlock()
	for _, c := range consumers {
		c.Stop()
	}
	if holdPub != nil {
		_ = holdPub.Close()
	}
	var first error
	switch {
	case s.Keep:
		s.mu.Lock()
		s.kept = declared
		s.mu.Unlock()
	case len(declared) > 0:
		first = s.deleteOwned(ctx, declared)
	}
	if err := s.closeConn(); first == nil && err != nil && !errors.Is(err, amqp.ErrClosed) {
		first = err
	}
	return first
}

// closeConn closes the session's connection for good: live dials no new
// one after it.
func (s *Session) closeConn() error {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.closed = true
	return s.conn.Close()
}

// deleteOwned deletes the queues the session created, on the session's
// live connection (a fresh one if the broker closed it).
func (s *Session) deleteOwned(ctx context.Context, names []string) error {
	conn, err := s.live(ctx)
	if err != nil {
		return fmt.Errorf("deleting the run's queues: %w", err)
	}
	return s.deleteOn(ctx, conn, names)
}

// DeleteKept deletes the queues a session with Keep left at Close, on a
// connection of its own: a later part of the same run declares them
// again, and only the run's last part is left for the student.
func (s *Session) DeleteKept(ctx context.Context) error {
	s.mu.Lock()
	kept := s.kept
	s.kept = nil
	s.mu.Unlock()
	if len(kept) == 0 {
		return nil
	}
	conn, err := dialAs(ctx, s.URL, ConnectionName(s.Names), nil)
	if err != nil {
		return fmt.Errorf("deleting the run's kept queues: %w", err)
	}
	defer conn.Close()
	return s.deleteOn(ctx, conn, kept)
}

// deleteOn deletes the queues names on conn, a queue already gone counting
// as deleted, the hold queue left where it holds foreign messages.
func (s *Session) deleteOn(ctx context.Context, conn *amqp.Connection, names []string) error {
	for _, name := range names {
		if name == s.Names.hold() && s.keepHold(ctx, conn) {
			continue
		}
		err := within(ctx, func() error {
			ch, err := conn.Channel()
			if err != nil {
				return err
			}
			defer ch.Close()
			_, err = ch.QueueDelete(name, false, false, false)
			return err
		})
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting queue %s: %w", name, err)
		}
	}
	return nil
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
		return zero, fmt.Errorf("broker did not answer: %w", ctx.Err())
	}
}

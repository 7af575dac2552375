package rabbit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
)

// Topo is the declare-and-clean part of a Session (Session.Topo). Its
// contract: the session owns only what it created. Declare and
// DeclareArgs refuse a queue that already exists, so a run never
// consumes, drains or deletes someone else's queue; what they create is
// remembered, for Session.Close to delete (declare.go, exchange.go), and
// what the clean-up could not delete is remembered too, for TidyLeft to
// try again (left.go). Lock: owned.mu, held only to read or change what
// was declared, never across a broker call.
type Topo struct {
	s     *Session
	owned owned
}

// owned is what the session created on the broker, for Close to delete
// and WaitSettled to check. mu guards every field.
type owned struct {
	mu       sync.Mutex
	declared []string                 // broker names of the queues this session created, in order
	ttls     map[string]time.Duration // their TTLs (lesson time) by broker name, where they have one (see Expect)
	kept     []string                 // the queues Close left under Keep (DeleteKept)
	// left and leftExchanges are what the clean-up could not delete
	// (left.go): still the run's, for TidyLeft to try again.
	left          []string
	leftExchanges []string
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
func (tp *Topo) Declare(ctx context.Context, t flow.Topology) error {
	if err := t.Check(); err != nil {
		return err
	}
	if err := checkTTLs(t, tp.s.Clock); err != nil {
		return err
	}
	if err := tp.s.guest.claim(ctx); err != nil {
		return err
	}
	if err := tp.refuseExisting(ctx, t); err != nil {
		return err
	}
	for _, q := range t.Queues {
		if err := tp.declare(ctx, q.Name, tp.arguments(q)); err != nil {
			return err
		}
		if q.TTL > 0 {
			tp.owned.mu.Lock()
			if tp.owned.ttls == nil {
				tp.owned.ttls = map[string]time.Duration{}
			}
			tp.owned.ttls[tp.s.Names.Of(q.Name)] = q.TTL
			tp.owned.mu.Unlock()
		}
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
func checkTTLs(t flow.Topology, clock lab.Clock) error {
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
func (tp *Topo) refuseExisting(ctx context.Context, t flow.Topology) error {
	var found ExistsError
	for _, q := range t.Queues {
		name := tp.s.Names.Of(q.Name)
		exists, err := tp.s.link.exists(ctx, name)
		if err != nil {
			return fmt.Errorf("checking queue %s: %w", name, err)
		}
		if !exists {
			continue
		}
		found.Queues = append(found.Queues, name)
		var pe *PreconditionError
		if err := tp.queueDeclare(ctx, name, tp.arguments(q)); errors.As(err, &pe) && found.Conflict == nil {
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
func (l *link) exists(ctx context.Context, name string) (bool, error) {
	_, err := l.inspect(ctx, name)
	if isNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// inspect passively declares broker queue name on a channel of its own,
// waiting for a broker that is away as Retry says.
func (l *link) inspect(ctx context.Context, name string) (q amqp.Queue, err error) {
	err = l.s.OnConnection(ctx, "inspecting "+name, func(conn *amqp.Connection) (err error) {
		q, err = inspectOn(ctx, conn, name)
		return err
	})
	return q, err
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

// mayExist reports whether a declare that returned err may have created
// its queue: it succeeded, or it was abandoned rather than refused (its
// bound, a run cut short, a dropped connection), and the broker may still
// carry it out. Close deletes such a queue all the same: one that is not
// there is no error. (A Q25 run cut mid-declare left its queue when only
// successes were recorded.)
func mayExist(err error) bool {
	return err == nil || Transient(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// isNotFound reports a 404 NOT_FOUND from the broker.
func isNotFound(err error) bool {
	var amqpErr *amqp.Error
	return errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound
}

// declare declares one durable queue of the session's topology and
// records it for deletion at Close.
func (tp *Topo) declare(ctx context.Context, seedName string, args amqp.Table) error {
	name := tp.s.Names.Of(seedName)
	err := tp.queueDeclare(ctx, name, args)
	var pre *PreconditionError
	if errors.As(err, &pre) {
		return err // created between our check and now, by someone else: not ours
	}
	if mayExist(err) {
		tp.own(name)
	}
	if err != nil {
		return fmt.Errorf("declaring queue %s: %w", name, err)
	}
	return nil
}

// own records queue name (a broker name) as the session's, for Close to
// delete, once however often a retried declare records it.
func (tp *Topo) own(name string) {
	tp.owned.mu.Lock()
	defer tp.owned.mu.Unlock()
	if !slices.Contains(tp.owned.declared, name) {
		tp.owned.declared = append(tp.owned.declared, name)
	}
}

// Redeclare declares queue q again exactly as Declare would, without
// recording it. The broker accepts it only if the queue's arguments are
// equivalent, so this reads the declared arguments back by behaviour.
func (tp *Topo) Redeclare(ctx context.Context, q flow.Queue, args amqp.Table) error {
	if args == nil {
		args = tp.arguments(q)
	}
	return tp.queueDeclare(ctx, tp.s.Names.Of(q.Name), args)
}

// arguments are the x-arguments the session declares q with: Arguments,
// made quorum under Session.Quorum.
func (tp *Topo) arguments(q flow.Queue) amqp.Table {
	q.Quorum = q.Quorum || tp.s.Quorum
	return Arguments(q, tp.s.Names, tp.s.Clock)
}

// queueDeclare declares durable queue name on a channel of its own (a 406
// closes the channel it happens on, and the session must stay usable) and
// turns a 406 PRECONDITION_FAILED into a *PreconditionError.
func (tp *Topo) queueDeclare(ctx context.Context, name string, args amqp.Table) error {
	err := tp.s.OnConnection(ctx, "declaring "+name, func(conn *amqp.Connection) error {
		return onChannel(ctx, conn, func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare(name, true, false, false, false, args)
			return err
		})
	})
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.PreconditionFailed {
		return &PreconditionError{Queue: name, Detail: amqpErr.Reason}
	}
	return err
}

// Depth returns how many messages are ready in seed queue name (a passive
// declare: it fails if the queue does not exist).
func (tp *Topo) Depth(ctx context.Context, name string) (int, error) {
	q, err := tp.s.link.inspect(ctx, tp.s.Names.Of(name))
	return q.Messages, err
}

// Consumers returns how many consumers seed queue name has, as the broker
// counts them (a passive declare).
func (tp *Topo) Consumers(ctx context.Context, name string) (int, error) {
	q, err := tp.s.link.inspect(ctx, tp.s.Names.Of(name))
	return q.Consumers, err
}

// deleteOwned deletes the queues the session created, on the session's
// live connection (a fresh one if the broker closed it), waiting for a
// broker that is restarting as Retry says. The error names every queue
// left behind.
func (tp *Topo) deleteOwned(ctx context.Context, names []string) error {
	var left []string
	var first error
	for _, name := range names {
		err := tp.s.OnConnection(ctx, "deleting queue "+name, func(conn *amqp.Connection) error {
			if name == tp.s.Names.hold() && tp.s.guest.keepHold(ctx, conn) {
				return nil
			}
			return onChannel(ctx, conn, func(ch *amqp.Channel) error {
				_, err := ch.QueueDelete(name, false, false, false)
				return err
			})
		})
		if err != nil && !isNotFound(err) {
			left = append(left, name)
			first = cmp.Or(first, err)
		}
	}
	if len(left) > 0 {
		tp.leave(left, nil)
		return fmt.Errorf("the clean-up left the run's queues %s behind (rabbitmqctl delete_queue each, or qlab broker clean): %w",
			strings.Join(left, ", "), first)
	}
	return nil
}

// DeleteKept deletes the queues a session with Keep left at Close, on a
// connection of its own (the session's is closed): a later part of the
// same run declares them again, and only the run's last part is left for
// the student.
func (tp *Topo) DeleteKept(ctx context.Context) error {
	tp.owned.mu.Lock()
	kept := tp.owned.kept
	tp.owned.kept = nil
	tp.owned.mu.Unlock()
	if len(kept) == 0 {
		return nil
	}
	conn, err := dialAs(ctx, tp.s.URL, ConnectionName(tp.s.Names), nil)
	if err != nil {
		return fmt.Errorf("deleting the run's kept queues: %w", err)
	}
	defer closeWithin(conn)
	for _, name := range kept {
		if name == tp.s.Names.hold() && tp.s.guest.keepHold(ctx, conn) {
			continue
		}
		err := onChannel(ctx, conn, func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(name, false, false, false)
			return err
		})
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting queue %s: %w", name, err)
		}
	}
	return nil
}

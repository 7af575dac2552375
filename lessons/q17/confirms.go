package q17

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

// A confirm strategy is how many published messages may wait for their
// confirm at once. The seed's publish() is window 1: sendToQueue, then
// waitForConfirms, for every message.
type confirmStrategy struct {
	name   string
	window int // unconfirmed publishes allowed in flight; 0: the channel is not in confirm mode
}

// The strategies the lesson measures, slowest first.
var confirmStrategies = []confirmStrategy{
	{"waitForConfirms after each (the seed)", 1},
	{"window of 64", 64},
	{"window of 256", 256},
	{"no confirms", 0},
}

// publishRun is what one publisher did and knew.
type publishRun struct {
	sent      int           // publishes amqp091-go handed to the socket
	confirmed int           // of those, acked by the broker when the run ended (or was cut)
	elapsed   time.Duration // real time from the first publish to the last confirm (or the last send, without confirms)
	maxOut    int           // the most publishes ever waiting for a confirm at once
}

// unknown is how many messages the publisher cannot vouch for: sent, but
// no confirm came back. After a crash these are the ones to publish again.
func (r publishRun) unknown() int { return r.sent - r.confirmed }

// publishJobs publishes n persistent email jobs of run runID, their ids
// ids00001…, to broker queue queue on ch through the default exchange,
// keeping at most s.window
// unconfirmed (a sliding window: it waits for the oldest before sending more).
// With cutAt > 0 it calls cut right after sending message cutAt, as a crash
// would, and reports what the publisher knew at that moment.
func publishJobs(ctx context.Context, ch *amqp.Channel, queue, runID, ids string, s confirmStrategy, n, cutAt int, cut func()) (publishRun, error) {
	var run publishRun
	var all, window []*amqp.DeferredConfirmation
	start := time.Now()
	for i := 1; i <= n; i++ {
		task := fmt.Sprintf("%s%05d", ids, i)
		msg := rabbit.Publishing(task, notify.NewJob(task, start).Encode())
		msg.AppId = runID // the run's stamp, as rabbit's Publisher adds it: Empty counts only these
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "" /* default exchange */, queue,
			false /* mandatory */, false /* immediate */, msg)
		if err != nil {
			return run, fmt.Errorf("publishing %s: %w", task, err)
		}
		run.sent++
		if s.window > 0 { // dc is nil on a channel not in confirm mode
			all, window = append(all, dc), append(window, dc)
			run.maxOut = max(run.maxOut, len(window))
		}
		if i == cutAt {
			run.confirmed = countAcked(all) // what the publisher knows, the instant before it dies
			cut()
			return run, nil
		}
		if s.window > 0 && len(window) == s.window {
			if err := rabbit.WaitConfirm(ctx, window[0]); err != nil {
				return run, err
			}
			window = window[1:]
		}
	}
	for _, dc := range window {
		if err := rabbit.WaitConfirm(ctx, dc); err != nil {
			return run, err
		}
	}
	run.elapsed = time.Since(start)
	run.confirmed = countAcked(all)
	return run, nil
}

// countAcked counts the confirms already in and positive.
func countAcked(dcs []*amqp.DeferredConfirmation) int {
	n := 0
	for _, dc := range dcs {
		if dc.Acked() {
			n++
		}
	}
	return n
}

// publishChannel opens a channel on conn for strategy s: in confirm mode
// unless s has no window.
func publishChannel(conn *amqp.Connection, s confirmStrategy) (*amqp.Channel, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if s.window > 0 {
		if err := ch.Confirm(false /* noWait */); err != nil {
			ch.Close()
			return nil, err
		}
	}
	return ch, nil
}

// confirmRepeats is how many clean runs each strategy gets: one run of a
// few hundred messages is tens of milliseconds for the fast strategies, and
// a busy machine can swap two rows; the table shows the median and the
// spread, so a reader sees which rows this machine can tell apart.
const confirmRepeats = 5

// A brief run (lesson.Options.Brief) measures the same strategies, cut
// and tables on fewer messages and runs: a median and a spread still,
// about a tenth of the publishing.
const (
	briefMessages = 100
	briefRepeats  = 2
)

// confirmSize is how much the confirm measurement publishes: messages per
// strategy and run (cleanMessages of it for a clean run) and clean runs
// per strategy.
type confirmSize struct{ messages, repeats int }

// confirmSizes is the lesson's size, or the brief one when brief.
func confirmSizes(brief bool) confirmSize {
	if brief {
		return confirmSize{messages: briefMessages, repeats: briefRepeats}
	}
	return confirmSize{messages: confirmMessages, repeats: confirmRepeats}
}

// cleanMessages is how many messages a clean run of s publishes: n for the
// seed's confirm-per-message (each a round trip, steady), ten times n for
// the strategies that pipeline, so that their runs last long enough for a
// busy machine's noise not to swamp them.
func cleanMessages(s confirmStrategy, n int) int {
	if s.window == 1 {
		return n
	}
	return 10 * n
}

// confirmRow is one strategy's measurement: confirmSize.repeats clean
// runs and a cut one.
type confirmRow struct {
	strategy confirmStrategy
	clean    publishRun      // the clean run that confirmed fewest (every one must confirm all)
	held     int             // the fewest the broker held after a clean run
	elapsed  []time.Duration // each clean run's real time until the last confirm (or send)
	allIn    []time.Duration // each clean run's real time until the broker held all n (without confirms: later than the publisher finished)
	cut      publishRun
	cutHeld  int // what the broker held after the cut
}

// lost is what the cut destroyed: sent, and not in the queue.
func (r confirmRow) lost() int { return r.cut.sent - r.cutHeld }

// measureConfirms runs each strategy z.repeats times on email-queue with
// cleanMessages of z.messages and no fault (msg/s, and the broker must
// hold all), the strategies taking turns so that a busy moment of the
// machine hits them alike; then once more each on z.messages with the
// publisher's TCP connection reset right after message cutAt. The queue
// is the run's own and is purged between runs. say hears, before each
// publish, what the next seconds wait for: a full run takes 25 s and
// more with no event.
func measureConfirms(ctx context.Context, s *rabbit.Session, z confirmSize, cutAt int, say func(string)) ([]confirmRow, error) {
	// The TUI's fault key leaves these connections alone: a cut from
	// outside would measure the fault (the lesson makes its own cut).
	ctx = lab.WithFaults(ctx, nil)
	queue := s.Names.Of(notify.EmailQueue)
	rows := make([]confirmRow, len(confirmStrategies))
	for i, st := range confirmStrategies {
		rows[i] = confirmRow{strategy: st, held: -1}
	}
	for rep := range z.repeats {
		for i := range rows {
			r := &rows[i]
			say(fmt.Sprintf("q17: %s, clean run %d of %d: %d jobs, then waiting for all in the queue",
				r.strategy.name, rep+1, z.repeats, cleanMessages(r.strategy, z.messages)))
			ids := fmt.Sprintf("s%d.r%d.", i+1, rep+1)
			run, held, allIn, err := publishOnce(ctx, s, queue, ids, r.strategy, cleanMessages(r.strategy, z.messages), 0)
			if err != nil {
				return nil, err
			}
			if r.held < 0 || held < r.held {
				r.held = held
			}
			if len(r.elapsed) == 0 || run.confirmed < r.clean.confirmed {
				r.clean = run
			}
			r.elapsed, r.allIn = append(r.elapsed, run.elapsed), append(r.allIn, allIn)
		}
	}
	for i := range rows {
		say(fmt.Sprintf("q17: %s, cut after job %d: waiting for the queue's depth to settle (≤ 10 s)",
			rows[i].strategy.name, cutAt))
		var err error
		ids := fmt.Sprintf("s%d.cut.", i+1)
		if rows[i].cut, rows[i].cutHeld, _, err = publishOnce(ctx, s, queue, ids, rows[i].strategy, z.messages, cutAt); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// publishOnce publishes jobs ids00001… on a connection of its own (cut,
// if cutAt > 0), waits until the queue's depth settles, and empties the
// queue: what the broker held is those jobs among them (rabbit.Empty
// parks a message someone else published there, and acks away uncounted
// a straggler of an earlier publish: with both cores busy, one job of a
// cut run reached the queue after its depth had read the same twice and
// was counted in the next run's, one more than that run sent).
func publishOnce(ctx context.Context, s *rabbit.Session, queue, ids string, st confirmStrategy, n, cutAt int) (publishRun, int, time.Duration, error) {
	conn, err := s.DialCuttable(ctx)
	if err != nil {
		return publishRun{}, 0, 0, err
	}
	defer conn.Close()
	ch, err := publishChannel(conn.Connection, st)
	if err != nil {
		return publishRun{}, 0, 0, err
	}
	start := time.Now()
	run, err := publishJobs(ctx, ch, queue, s.Names.Run, ids, st, n, cutAt, conn.Cut)
	if err != nil {
		return run, 0, 0, err
	}
	want := n
	if cutAt > 0 {
		want = -1 // unknown: wait for the depth to stop changing
	}
	depth, err := settledDepth(ctx, s, want)
	allIn := time.Since(start)
	if err != nil {
		return run, depth, allIn, err
	}
	held, err := s.Guest().Empty(ctx, notify.EmailQueue, depth, ids)
	return run, held, allIn, err
}

// settledDepth polls email-queue's depth until it reaches want (or more:
// someone else may have published there too), or (want < 0) reads the
// same twice in a row, for at most depthSettle.
func settledDepth(ctx context.Context, s *rabbit.Session, want int) (int, error) {
	const depthSettle = 10 * time.Second
	depth, last := 0, -1
	_, err := rabbit.PollUntil(ctx, 20*time.Millisecond, depthSettle, func() (bool, error) {
		d, err := s.Topo().Depth(ctx, notify.EmailQueue)
		if err != nil {
			return false, err
		}
		settled := (want >= 0 && d >= want) || (want < 0 && d == last)
		depth, last = d, d
		return settled, nil
	})
	return depth, err
}

// cutPoint is where the plan's seed cuts the publisher: somewhere in the
// second half of n, the same on every run with that seed.
func cutPoint(seed int64, n int) int {
	h := fnv.New32a()
	h.Write([]byte(strconv.FormatInt(seed, 10)))
	return n/2 + int(h.Sum32()%uint32(max(n/4, 1)))
}

// errNoQueue means a demonstration needs a queue to be missing, and it is
// there.
var errNoQueue = errors.New("email-queue must not exist yet")

// unroutable is the seed's publish() before anyone declared email-queue
// (the API started before the worker): confirmed and gone; and the same
// with mandatory, whose basic.return the publisher reads.
type unroutable struct{ plain, mandatory rabbit.Unroutable }

// publishUndeclared runs both publishes to the undeclared email-queue.
func publishUndeclared(ctx context.Context, s *rabbit.Session) (unroutable, error) {
	var u unroutable
	var err error
	if u.plain, err = s.Probes().PublishUnroutable(ctx, notify.EmailQueue, "early-job", false); err != nil {
		return u, fmt.Errorf("%w: %v", errNoQueue, err)
	}
	u.mandatory, err = s.Probes().PublishUnroutable(ctx, notify.EmailQueue, "early-job", true)
	return u, err
}

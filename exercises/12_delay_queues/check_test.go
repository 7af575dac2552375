//go:build qlabex

package delayqueues

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

// schedule is one case: the delays, and the retries sent, in order.
type schedule struct {
	name    string
	delays  []time.Duration
	retries []int
}

// The cases: the waits the document's code makes (30 s, 1 min, 2 min,
// 5 min; 10 s is never used), scaled 1/100, sent longest first, as when
// A's fourth retry is waiting while B and C fail for the first time; and
// a schedule that shortens, with a retry past its end (the last delay).
// At 1/200 (150 ms to 1.5 s, and 400/200 ms) a loaded broker's expiry
// timers, one queue's late against another's, once brought a retry of
// the solution back behind a longer one (t5, 2026-11-28, busy cores).
var schedules = []schedule{
	{name: "the document's waits as its code runs: 30 s, 1 min, 2 min, 5 min (scaled 1/100), the longest sent first",
		delays: scaled(notify.Waits(), scale), retries: []int{4, 3, 2, 1}},
	{name: "waits of 800 ms then 400 ms, and a third retry past the end (400 ms)",
		delays: []time.Duration{800 * time.Millisecond, 400 * time.Millisecond}, retries: []int{1, 3, 2}},
}

// scale is how many times shorter the first schedule's waits are than
// the document's.
const scale = 100

func scaled(ds []time.Duration, by time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / by
	}
	return out
}

func TestDelayQueues(t *testing.T) {
	c := check.New(t)
	url, ok := c.Broker()
	if !ok {
		return
	}
	for _, sc := range schedules {
		runSchedule(c, url, sc)
	}
}

// delayOf is retry's wait under the schedule.
func (sc schedule) delayOf(retry int) time.Duration {
	return sc.delays[min(max(retry, 1), len(sc.delays))-1]
}

// back is one retry as it came back to the work queue.
type back struct {
	retry  int
	from   string // the queue x-death says it expired in
	reason string
	waited time.Duration // the configured wait: that queue's TTL or the message's own expiration
}

// sent is when one retry was published: the broker took it some time
// between from (the publish began) and to (its confirm came back).
type sent struct{ from, to time.Duration }

// dueMargin is how much sooner one retry must surely be due than another
// for the order check to hold it to coming back first: the broker's
// expiry timers and dead-lettering take a few milliseconds of their own,
// on a loaded machine a hundred or more. A retry held up behind a longer
// one is late by the difference of their delays, 300 ms or more here.
const dueMargin = 150 * time.Millisecond

// runSchedule declares the work queue and the student's retry queues
// under a fresh prefix, publishes the retries where RetryRoute says,
// collects them as they come back and checks the order and the waits.
func runSchedule(c *check.Checker, url string, sc schedule) {
	r := check.Run{Name: sc.name}
	s, err := check.NewScratch(url)
	if err != nil {
		c.That(r, "a RabbitMQ broker to check against", false, err.Error(), "a connection", "")
		return
	}
	defer s.Close()
	n := Names{WorkQueue: s.Prefix + notify.EmailQueue, Retry: s.Prefix + notify.RetryQueue}
	seed := func(q string) string { return strings.TrimPrefix(q, s.Prefix) }
	queues := RetryQueues(n, sc.delays)
	var foreign []string
	for q := range queues {
		if !strings.HasPrefix(q, n.Retry) {
			foreign = append(foreign, q)
		}
	}
	if !c.That(r, "every retry queue's name starts with Names.Retry", len(foreign) == 0,
		fmt.Sprintf("%q", foreign), "names that start with "+n.Retry+" (the checker's private prefix)", "") {
		return // never declare outside the prefix on a shared broker
	}
	declared := s.Declare(n.WorkQueue, nil)
	for _, q := range slices.Sorted(maps.Keys(queues)) {
		if declared == nil {
			if err := s.Declare(q, queues[q]); err != nil {
				declared = fmt.Errorf("declaring %s with %v: %w", seed(q), queues[q], err)
			}
		}
	}
	if !c.That(r, "the broker accepts your retry queues", declared == nil, fmt.Sprint(declared), "every queue of RetryQueues declared", "") {
		return
	}
	got, when, events, err := send(s, n, sc, queues, seed)
	r.Events = events
	c.That(r, "every retry comes back to the work queue", err == nil && len(got) == len(sc.retries),
		fmt.Sprintf("%d of %d back: %v", len(got), len(sc.retries), err), fmt.Sprintf("%d of %d back", len(sc.retries), len(sc.retries)), "")
	for _, b := range got {
		want := sc.delayOf(b.retry)
		c.That(r, "each retry waits its own delay: the TTL of the queue it waited in",
			b.reason == "expired" && strings.HasPrefix(b.from, n.Retry) && b.waited == want,
			fmt.Sprintf("retry %d waited in %s (%s), configured for %d ms", b.retry, seed(b.from), b.reason, b.waited.Milliseconds()),
			fmt.Sprintf("retry %d expired in one of your retry queues, configured for %d ms", b.retry, want.Milliseconds()),
			fmt.Sprintf("r%d", b.retry))
	}
	c.That(r, "a short retry is not held up behind a long one", inDueOrder(got, when, sc), order(got, sc),
		order(sortedByDelay(sc), sc)+" (retries due within "+dueMargin.String()+" of each other in either order)", "")
}

// inDueOrder reports whether no retry came back before one that was
// surely due before it: published, confirmed and expired dueMargin
// sooner than the other could have been. A publish's time counts, not
// only its delay: on a busy machine a confirm can take longer than the
// gap between two delays, and the short retry is then really due later.
func inDueOrder(got []back, when map[int]sent, sc schedule) bool {
	for i, early := range got {
		for _, late := range got[i+1:] {
			dueLate := when[late.retry].to + sc.delayOf(late.retry)
			dueEarly := when[early.retry].from + sc.delayOf(early.retry)
			if dueLate+dueMargin < dueEarly {
				return false // late was due first by far, yet came back after early
			}
		}
	}
	return true
}

// order shows retries in the order they came back, with their delays.
func order(bs []back, sc schedule) string {
	var parts []string
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("r%d (%d ms)", b.retry, sc.delayOf(b.retry).Milliseconds()))
	}
	return "back in this order: " + strings.Join(parts, ", ")
}

// sortedByDelay is the order the retries are due in: by delay, and in
// the order sent among equal delays.
func sortedByDelay(sc schedule) []back {
	var bs []back
	for _, retry := range sc.retries {
		bs = append(bs, back{retry: retry})
	}
	slices.SortStableFunc(bs, func(a, b back) int { return int(sc.delayOf(a.retry) - sc.delayOf(b.retry)) })
	return bs
}

// send publishes each retry where RetryRoute says, on one confirming
// channel, and collects them as they come back to the work queue, within
// the longest delay and a few seconds for the broker. It returns them in
// the order they came back, and when each was published.
func send(s *check.Scratch, n Names, sc schedule, queues map[string]amqp.Table, seed func(string) string) ([]back, map[int]sent, []lab.Event, error) {
	ch, err := s.Conn.Channel()
	if err != nil {
		return nil, nil, nil, err
	}
	defer ch.Close()
	deliveries, err := ch.Consume(n.WorkQueue, "", true, true, false, false, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	pub, err := check.NewPublisher(s.Conn)
	if err != nil {
		return nil, nil, nil, err
	}
	defer pub.Close()
	when := map[int]sent{}
	start := time.Now()
	var events []lab.Event
	emit := func(e lab.Event) {
		e.TMs, e.Actor = time.Since(start).Milliseconds(), "Checker"
		events = append(events, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), slices.Max(sc.delays)+5*time.Second)
	defer cancel()
	for _, retry := range sc.retries {
		q, exp := RetryRoute(n, sc.delays, retry)
		id := fmt.Sprintf("r%d", retry)
		if _, ok := queues[q]; !ok {
			return nil, when, events, fmt.Errorf("RetryRoute sends retry %d to %s, which RetryQueues does not declare", retry, seed(q))
		}
		emit(lab.Event{Kind: lab.Scheduled, Task: id, Queue: seed(n.WorkQueue), To: seed(q), Attempt: retry, DelayMs: sc.delayOf(retry).Milliseconds(),
			Note: fmt.Sprintf("published to %s, expiration %q", seed(q), exp)})
		from := time.Since(start)
		if err := pub.Publish(ctx, q, amqp.Publishing{MessageId: id, Expiration: exp, Body: []byte(id)}); err != nil {
			return nil, when, events, err
		}
		when[retry] = sent{from: from, to: time.Since(start)}
	}
	var got []back
	for len(got) < len(sc.retries) {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return got, when, events, fmt.Errorf("the checker's channel closed")
			}
			retry, _ := strconv.Atoi(strings.TrimPrefix(d.MessageId, "r"))
			b := back{retry: retry, waited: configured(d.Headers, queues)}
			if deaths := rabbit.ReadDeaths(d.Headers); len(deaths) > 0 {
				b.from, b.reason = deaths[0].Queue, deaths[0].Reason
			}
			got = append(got, b)
			emit(lab.Event{Kind: lab.Started, Task: d.MessageId, Queue: seed(n.WorkQueue), Attempt: retry,
				Note: "back from " + seed(b.from) + " (" + b.reason + ")"})
		case <-ctx.Done():
			return got, when, events, fmt.Errorf("still waiting after %v", slices.Max(sc.delays)+5*time.Second)
		}
	}
	return got, when, events, nil
}

// configured is the wait a returned message was given: the TTL of the
// queue it expired in (x-death's latest entry), else its own expiration
// (x-death's original-expiration), in the broker's own words.
func configured(headers amqp.Table, queues map[string]amqp.Table) time.Duration {
	raw, _ := headers["x-death"].([]any)
	if len(raw) == 0 {
		return 0
	}
	latest, _ := raw[0].(amqp.Table)
	queue, _ := latest["queue"].(string)
	if ttl, ok := queues[queue]["x-message-ttl"]; ok {
		if ms, err := strconv.ParseInt(fmt.Sprint(ttl), 10, 64); err == nil {
			return time.Duration(ms) * time.Millisecond
		}
	}
	exp, _ := latest["original-expiration"].(string)
	ms, _ := strconv.ParseInt(exp, 10, 64)
	return time.Duration(ms) * time.Millisecond
}

// The checker's first schedule is the seed's waits as its code runs
// (30 s, 1 min, 2 min, 5 min; lessons Q14 and Q15), scaled 1/100.
func TestTheDocumentsScheduleIsTheSeeds(t *testing.T) {
	var waits []time.Duration
	for _, d := range schedules[0].delays {
		waits = append(waits, d*scale)
	}
	if want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}; fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("the document's schedule waits %v; the seed's code waits %v", waits, want)
	}
}

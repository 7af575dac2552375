package q15

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/notify"
)

// q15RoutesTable shows, per run, where each nacked message was found and
// the x-death header it carried there.
func q15RoutesTable(outcomes []*q15Outcome) render.Table {
	t := render.Table{
		Title:  "What happened: where each version's failed email landed",
		Header: []string{"run", "the document's version", "email-queue's arguments", "on failure the worker", "landed in", "x-death (most recent first)", "attempts, body retries"},
		Notes: []string{
			"Each landed message was read back with basic.get and left in place; x-death keeps one entry per (queue, reason) with a count.",
			"Run 1: a nack cannot add an expiration, and dead-lettering would not keep one: the broker removes a dead-lettered message's expiration " +
				"(x-death keeps it as original-expiration; measured on 3.10.8 and 4.3.6, the behaviour since 3.1.2). email-retry-queue has no x-message-ttl " +
				"(the diagram's \"TTL: varies\"), so nothing sends the message back to email-queue: it is stranded there.",
			"Runs 3–5: each retry is a new message (publishToRetryQueue sends the body, not the headers), so x-death counts one expiry " +
				"however many retries it took, on 3.10.8 and 4.3.6 alike (measured: 0 1 1 1 1 over rC's five deliveries); the body's retries counts them.",
			fmt.Sprintf("Retry delays are the document's getRetryDelay scaled 1/%d (30 s → %v); the route, not the wait, is the lesson.", q15Scale, q15Delay(1)),
		},
	}
	for i, o := range outcomes {
		t.Title = q15Titled(t.Title, o.version)
		if i == 0 && o.version != "" {
			t.Notes = append(t.Notes, "Had the retry copied the headers too: "+versions.XDeathRepublished.Note(o.version))
		}
		for _, l := range o.landed {
			t.Rows = append(t.Rows, []string{strings.SplitN(o.run.title, ":", 2)[0], o.run.version, o.arguments(), o.onFailure(),
				l.queue, l.deaths.Describe(o.names.Seed), fmt.Sprintf("%d, %d", l.attempt, l.retries)})
		}
	}
	return t
}

// q15SettleTable shows what settling a delivery twice did in runs 4 and 5.
func q15SettleTable(outcomes []*q15Outcome) render.Table {
	t := render.Table{
		Title:  "What happened: the consume callback's second settle",
		Header: []string{"run", "prefetch", "second settles", "the broker's answer", "redelivered", "worked twice"},
		Notes: []string{
			"A delivery tag can be settled once. A second ack (after processMessage's ack or nack) is a channel-level exception: the broker closes that channel, " +
				"not the connection, and requeues every delivery still unacked on it, marked redelivered.",
			fmt.Sprintf("At prefetch %d every job behind the one settled twice is already on the channel, unacked, when it closes. "+
				"At the document's prefetch 1 processMessage's ack frees the one slot, and the broker may hand out the next job before it reads the second ack: "+
				"whether that job is caught on the closing channel is a race inside the broker (the row shows this run's). Either way the channel dies at every failure; "+
				"the document reconnects only when the connection closes, so its worker would stop consuming. The lab's worker opens a new channel.", q15Prefetch),
			"A method frame that arrives for a channel amqp091-go (v1.16.0) has already released after the close makes it close the whole connection " +
				"(504 channel/connection is not open; Connection.dispatchClosed): the lab's worker has a connection of its own and dials again, " +
				"a worker that shared it with its publisher would lose both.",
			"The lab's worker handles one delivery at a time and makes a round trip (basic.qos) after each, so it never works a job from a channel the broker already closed: " +
				"a redelivered job here was not worked before. Without that check amqp091-go can hand out the next buffered delivery before the close arrives; " +
				"that job's ack then fails, and the broker redelivers an email already sent.",
		},
	}
	for _, o := range outcomes {
		if !o.run.ackAgain {
			continue
		}
		t.Title = q15Titled(t.Title, o.version)
		b := o.book
		b.mu.Lock()
		t.Rows = append(t.Rows, []string{strings.SplitN(o.run.title, ":", 2)[0], fmt.Sprint(o.run.prefetch),
			q15Counted(b.again), q15Counted(b.closes), q15Counted(b.redeliveries), q15Counted(b.twice())})
		b.mu.Unlock()
	}
	return t
}

// q15Titled adds the broker's version to title once.
func q15Titled(title, version string) string {
	if version == "" || strings.HasSuffix(title, ")") {
		return title
	}
	return title + " (RabbitMQ " + version + ")"
}

// arguments is email-queue's x-arguments as the run declared them, under
// the seed's names.
func (o *q15Outcome) arguments() string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(o.args)) {
		out = append(out, fmt.Sprintf("%s %v", k, o.args[k]))
	}
	s := strings.Join(out, ", ")
	if o.run.diagram {
		s += fmt.Sprintf("; email-dlx binds email-queue's own key to %s", notify.RetryQueue)
	}
	return s
}

// onFailure is what the run's worker does with a failed delivery.
func (o *q15Outcome) onFailure() string {
	switch {
	case !o.run.retry:
		return "nack(msg, false, false)"
	case !o.run.ackAgain:
		return fmt.Sprintf("retries++; a copy to %s with expiration getRetryDelay(retries), ack; nack once retries >= %d", notify.RetryQueue, notify.MaxRetries)
	}
	return "the same, then the callback acks again"
}

// q15Counted is "n: a, b, c" (the same items grouped: "4: sC ×4"), or "0".
func q15Counted(items []string) string {
	if len(items) == 0 {
		return "0"
	}
	var groups []string
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j] == items[i] {
			j++
		}
		if j-i > 1 {
			groups = append(groups, fmt.Sprintf("%s ×%d", items[i], j-i))
		} else {
			groups = append(groups, items[i])
		}
		i = j
	}
	return fmt.Sprintf("%d: %s", len(items), strings.Join(groups, ", "))
}

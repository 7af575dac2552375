package q25

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons/q19"
	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/birthday"
)

// secs is lesson time d in seconds, one decimal.
func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// dur is a configured duration as the notes say it: "30 s", "1.5 s".
func dur(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	return secs(d)
}

// count is an x-delivery-count as a student reads it: "-" when absent.
func count(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// seedDelay is the seed's wait before retry n (1-based): 2 s × 2ⁿ⁻¹.
func seedDelay(n int) time.Duration { return birthday.Delay(n - 1) }

// of is task's deliveries, in order.
func of(rows []delivery, task string) []delivery {
	var out []delivery
	for _, r := range rows {
		if r.task == task {
			out = append(out, r)
		}
	}
	return out
}

// queueTable is the queue part (a) declares, argument by argument: the
// page's topology.
func queueTable(clock lab.Clock) render.Table {
	ms := func(d time.Duration) string {
		return fmt.Sprintf("%d ms (lesson %s)", clock.Real(d).Milliseconds(), dur(d))
	}
	return render.Table{
		Title:  "The queue: " + Queue + ", as part (a) declares it",
		Header: []string{"argument", "value", "what it does"},
		Rows: [][]string{
			{"x-queue-type", "quorum", "quorum only: a classic queue refuses the rest"},
			{"x-delayed-retry-type", TypeFailed, "hold a reject or a lost channel (not a nack)"},
			{"x-delayed-retry-min", ms(MinDelay), "the first wait; then min × x-delivery-count"},
			{"x-delayed-retry-max", ms(MaxDelay), "the cap; without it no wait grows"},
			{"x-delivery-limit", strconv.Itoa(DeliveryLimit), "retries; the sixth failure is dead-lettered"},
			{"x-dead-letter-exchange", `""`, "the default exchange: routes by queue name"},
			{"x-dead-letter-routing-key", DLQ, "where the limit sends a message"},
		},
		Notes: []string{"The broker's delays are real milliseconds: the lab declares the lesson's " +
			"2 s and 32 s at the run's speed. The worker: prefetch " + strconv.Itoa(Slots) + ", " +
			"d.Ack(false) when the mail is sent, d.Reject(true) when it is not; nothing else.",
			"A policy may set the same, keys without x- (delayed-retry-type, -min, -max; " +
				"apply-to quorum_queues): measured alike on RabbitMQ " + Version + "."},
	}
}

// scheduleTable is part (a): D1's deliveries, the broker's wait beside
// the seed's, and where the five waited.
func scheduleTable(m measured) render.Table {
	t := render.Table{
		Title:  "(a) D1's deliveries: the broker's back-off beside the seed's",
		Header: []string{"delivery", "at", "x-delivery-count", "waited", "broker's delay", "seed's delay", "then"},
	}
	d1 := of(m.rows, "D1")
	for i, r := range d1 {
		waited, broker, seed := "-", "-", "-"
		if i > 0 {
			waited = secs(r.at - d1[i-1].end)
			broker = secs(BrokerDelay(TypeFailed, Reject, r.count, MinDelay, MaxDelay))
			seed = secs(seedDelay(i))
		}
		then := "sent, acked"
		if r.err != nil {
			then = "rate-limited: reject"
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(r.n), secs(r.at), count(r.count), waited, broker, seed, then})
	}
	t.Notes = []string{
		fmt.Sprintf("Where they wait: at %s all five had failed and %s; they held "+
			"%d of the worker's %d prefetch slots and the queue reported %s ready. The broker held "+
			"them inside the quorum queue, in neither count (the management UI lists them as "+
			"delayed). %s was tried at %s, after %d attempts at D1–D5: it waited for no slot.",
			secs(m.look.at), lateLook(m.look), m.look.held, Slots, ready(m.look.ready),
			healthy, secs(m.firstH), m.beforeH),
		fmt.Sprintf("The broker's back-off is linear: x-delayed-retry-min × x-delivery-count, "+
			"capped by x-delayed-retry-max (%s and %s here): 2, 4, 6, 8, 10 s, where the seed "+
			"asks 2 s × 2ⁿ = 2, 4, 8, 16, 32 s. The first two retries match; from the third on no "+
			"setting doubles (the maximum only caps). Without x-delayed-retry-max the delay does "+
			"not grow at all: 2 s every time (measured on RabbitMQ %s).", dur(MinDelay), dur(MaxDelay), Version),
		fmt.Sprintf("waited: from the reject to the next delivery, lesson time (the broker's "+
			"timers are real time, so a loaded machine makes a wait longer, never shorter). The "+
			"worker keeps no header: x-delivery-count is the broker's (up to %d here). A sixth "+
			"failure would have been dead-lettered: part (c). Broker: RabbitMQ %s.", m.maxCount, m.version),
	}
	return t
}

// lateLook says whether part (a) looked in time: no wait run out and
// every task delivered once, as on a quiet machine.
func lateLook(l look) string {
	if l.due == 0 && l.fresh == 0 {
		return "no wait had run out"
	}
	return fmt.Sprintf("%d wait(s) had run out and %d task(s) were not delivered yet "+
		"(a loaded machine looked late)", l.due, l.fresh)
}

// ready is a ready count, or why it is unknown.
func ready(n int) string {
	if n < 0 {
		return "an unknown number (the passive declare failed)"
	}
	return strconv.Itoa(n)
}

// settleTable is part (b): which settles each retry type delays.
func settleTable(cs []*cell) render.Table {
	t := render.Table{
		Title:  "(b) Which settle the broker delays: waits after 3 failures (min 4 s, max 16 s)",
		Header: []string{"hand back with", TypeAll, TypeFailed, TypeReturned},
	}
	labels := map[Settle]string{Nack: "basic.nack, requeue", Reject: "basic.reject, requeue",
		Close: "channel closed, unacked"}
	row := map[Settle][]string{}
	for _, c := range cs {
		var waits []string
		for _, w := range c.waits {
			waits = append(waits, fmt.Sprintf("%.1f", w.Seconds()))
		}
		last := 0
		if len(c.counts) > 0 {
			last = c.counts[len(c.counts)-1]
		}
		row[c.settle] = append(row[c.settle], fmt.Sprintf("%s s, dc %s", strings.Join(waits, " "), count(last)))
	}
	for _, s := range []Settle{Nack, Reject, Close} {
		t.Rows = append(t.Rows, append([]string{labels[s]}, row[s]...))
	}
	t.Notes = []string{
		"Each cell: one message on a queue of that x-delayed-retry-type, failed three times and " +
			"handed back the same way each time; the waits from each hand-back to the next " +
			"delivery (lesson time), and dc, the x-delivery-count of the last delivery. About 0.0 s: " +
			"back at once, that type does not delay that settle.",
		"basic.nack never counts a failed delivery on 4.3: type failed does not delay it, and " +
			"under all or returned it waits the minimum every time. basic.reject and a channel " +
			"that closes with the message unacked (a crash) count: the wait grows with the count. " +
			"The quorum queue guide says the same: a nack raises only x-acquired-count.",
		"So the seed's \"NACK + requeue with delay\", as amqplib's channel.nack(msg) sends it, " +
			"waits 2 s every time on 4.3 and never backs off: it takes channel.reject(msg, true), " +
			"basic.reject, for the delay to grow. Measured on RabbitMQ " + Version + ".",
	}
	return t
}

// limitTable is part (c): the delivery limit, with reject and with nack.
func limitTable(out outcome) render.Table {
	t := render.Table{
		Title:  fmt.Sprintf("(c) x-delivery-limit %d: what counts toward it", DeliveryLimit),
		Header: []string{"task", "hand back", "deliveries", "x-delivery-count read", "x-acquired-count read", "ended"},
	}
	for _, task := range []string{"P1", "P2"} {
		rows := of(out.rows, task)
		var counts, acquired []string
		settle := "-"
		for _, r := range rows {
			counts = append(counts, count(r.count))
			acquired = append(acquired, count(r.acquired))
			if r.settle != "" {
				settle = string(r.settle)
			}
		}
		ended := "the lab's guard"
		if reason, ok := out.deaths[task]; ok {
			ended = "DLQ, x-death " + reason
		}
		t.Rows = append(t.Rows, []string{task, settle, strconv.Itoa(len(rows)), strings.Join(counts, " "),
			strings.Join(acquired, " "), ended})
	}
	t.Notes = []string{
		fmt.Sprintf("P1: each reject counts; after %d counted failures the %s reject goes to the "+
			"DLQ by itself, x-death reason delivery_limit: the seed's QUEUE_MAX_RETRIES %d (six "+
			"attempts), kept by the broker, with no header and no code in the worker.",
			DeliveryLimit, ordinal(DeliveryLimit+1), DeliveryLimit),
		"P2: a nack never counts on 4.3 (x-delivery-count stays absent), so the limit is never " +
			"reached and the broker would hand it back every 2 s for ever; the lab's guard acks it " +
			"after " + strconv.Itoa(guard) + " deliveries and reports it dropped. Since 4.0 a quorum " +
			"queue's limit is 20 when none is declared.",
		versions.QuorumReturns.Note(out.version),
	}
	return t
}

// ordinal is 6 → "sixth", for the small numbers the notes use.
func ordinal(n int) string {
	words := []string{"zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"}
	if n < len(words) {
		return words[n]
	}
	return strconv.Itoa(n) + "th"
}

// besideTable is part (d): the same load, the broker's delayed retry
// beside Q19's TTL wait queues.
func besideTable(a measured, w q19.Stall) render.Table {
	t := render.Table{
		Title:  "(d) Q19's load two ways: the broker's delayed retry, Q19's TTL wait queues",
		Header: []string{"way", "queues", "H tried at", "attempts at the five", "count read", "all sent by"},
		Rows: [][]string{
			{"delayed retry (4.3)", "1 quorum + DLQ", secs(a.firstH), strconv.Itoa(a.attempts),
				strconv.Itoa(a.maxCount) + " (x-delivery-count)", secs(a.lastSent)},
			{"TTL wait queues (Q19)", fmt.Sprintf("1 + %d wait + DLQ", birthday.MaxRetries), secs(w.FirstH),
				strconv.Itoa(w.Attempts), strconv.Itoa(w.MaxCount) + " (own header)", secs(w.LastSent)},
		},
		Notes: []string{
			fmt.Sprintf("Both leave every slot free, so H goes first (Q19's timer before the nack "+
				"held all five and stalled H). The five are rate-limited for %s: the broker retries "+
				"after 2, 4, 6, 8 and 10 s (six attempts each), the wait queues after 2, 4, 8 and "+
				"16 s (five), the seed's doubling exactly.", dur(q19.LimitFor)),
			"The wait queues need a queue per delay, a worker that counts in a header of its own " +
				"and republishes, and code to park at the limit. The broker's retry needs one queue, " +
				"three arguments and basic.reject; it counts, waits and dead-letters by itself, on " +
				"RabbitMQ 4.3 or newer only, and its back-off is linear.",
		},
	}
	return t
}

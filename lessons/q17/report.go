package q17

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// onBroker is the title suffix naming the broker version the figures were
// measured on.
func onBroker(version string) string { return " (RabbitMQ " + version + ")" }

// confirmTable shows each strategy's clean run and cut run.
func confirmTable(version string, rows []confirmRow, z confirmSize, cutAt int) render.Table {
	t := render.Table{
		Title: "Publishing: confirms against speed, and what a cut connection loses" + onBroker(version),
		Header: []string{"strategy", fmt.Sprintf("msg/s all confirmed: median (min–max of %d)", z.repeats),
			fmt.Sprintf("msg/s broker holds all: median (min–max of %d)", z.repeats), "held / sent",
			fmt.Sprintf("cut after #%d: confirmed", cutAt), "broker holds", "lost", "unknown to the publisher", "at most unknown"},
		Notes: []string{
			fmt.Sprintf("%d persistent jobs per clean run to the durable email-queue for the seed's strategy, ten times as many for the others (their runs are short), "+
				"%d clean runs per strategy taking turns, real time on this machine "+
				"(a loaded 2-core box: compare the rows, not the numbers with yours). Rows are ordered by the median of the third column. "+
				"Without confirms the publisher is done when the bytes are in its socket, long before the broker has them: the third column waits for the queue's depth.", z.messages, z.repeats),
			"The cut resets the publisher's TCP connection (SO_LINGER 0) right after it sent the message, the way a killed process or a pulled cable does: " +
				"bytes still in the socket are thrown away. Measured: sent, confirmed and what the queue holds afterwards. " +
				"Every confirmed message was in the queue; lost = sent - held; the unknown are the ones a recovering publisher must send again (a duplicate where the broker had it).",
			"Argued, not run here (the lab never stops the shared node): a broker crash loses what it had not written to disk; it confirms a persistent message " +
				"to a durable queue only once written, so the same bound holds: at most the unconfirmed window. The cut was measured on RabbitMQ 3.10.8 and 4.3.6 " +
				"alike: every confirmed message was in the queue (4.3.6, window of 64: 195 confirmed, 211 held, 49 unknown).",
		},
	}
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b confirmRow) int { return cmp.Compare(a.allInRate().median, b.allInRate().median) })
	if overlap := overlapping(rows); overlap != "" {
		t.Notes = append(t.Notes, "On this run the spreads of "+overlap+" overlap: this machine cannot order those rows.")
	}
	for _, r := range rows {
		bound := "1 (the message in flight)"
		switch {
		case r.strategy.window == 0:
			bound = "everything since the start"
		case r.strategy.window > 1:
			bound = fmt.Sprintf("%d (the window)", r.strategy.window)
		}
		confirmed := fmt.Sprint(r.cut.confirmed)
		allConfirmed := rates(r.clean.sent, r.elapsed).String()
		if r.strategy.window == 0 {
			confirmed, allConfirmed = "- (no confirms)", "- (none)"
		}
		t.Rows = append(t.Rows, []string{r.strategy.name, allConfirmed, r.allInRate().String(), fmt.Sprintf("%d / %d", r.held, r.clean.sent),
			confirmed, fmt.Sprint(r.cutHeld), fmt.Sprint(r.lost()), fmt.Sprint(r.cut.unknown()), bound})
	}
	return t
}

// spread is a set of measured rates: their median and range.
type spread struct{ median, lo, hi float64 }

// rates is the spread of n messages in each of ds, in msg/s.
func rates(n int, ds []time.Duration) spread {
	var rs []float64
	for _, d := range ds {
		if d > 0 {
			rs = append(rs, float64(n)/d.Seconds())
		}
	}
	if len(rs) == 0 {
		return spread{}
	}
	slices.Sort(rs)
	return spread{median: rs[len(rs)/2], lo: rs[0], hi: rs[len(rs)-1]}
}

// String is "median (min–max)", or "-" when nothing was measured.
func (s spread) String() string {
	if s.hi == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", s.median, s.lo, s.hi)
}

// allInRate is the spread of r's rate until the broker held every message.
func (r confirmRow) allInRate() spread { return rates(r.clean.sent, r.allIn) }

// overlapping names the neighbouring rows (ordered by median) whose
// ranges overlap, or "".
func overlapping(rows []confirmRow) string {
	var pairs []string
	for i := 1; i < len(rows); i++ {
		if rows[i-1].allInRate().hi >= rows[i].allInRate().lo {
			pairs = append(pairs, fmt.Sprintf("%q and %q", rows[i-1].strategy.name, rows[i].strategy.name))
		}
	}
	return strings.Join(pairs, ", ")
}

// unroutableTable shows the two publishes to the undeclared email-queue.
func unroutableTable(version string, u unroutable) render.Table {
	return render.Table{
		Title:  "A job published before email-queue existed" + onBroker(version),
		Header: []string{"publish", "confirm", "basic.return", "email-queue afterwards"},
		Rows: [][]string{
			unroutableRow("sendToQueue, as the seed's publish()", u.plain),
			unroutableRow("the same with mandatory: true", u.mandatory),
		},
		Notes: []string{
			"The default exchange routes by queue name; with no such queue nothing takes the job, and the broker still confirms it: " +
				"a confirm means the broker has handled the message, not that a queue holds it (for an unroutable mandatory message the basic.return comes first, then the ack).",
			"amqp091-go: publish with mandatory=true and read Channel.NotifyReturn; the worker that declares the topology must run before the API publishes, or the API declares it too.",
		},
	}
}

func unroutableRow(what string, u rabbit.Unroutable) []string {
	confirm, ret, exists := "nack", "none: the job is gone", "does not exist"
	if u.Confirmed {
		confirm = "ack"
	}
	if u.Returned {
		ret = fmt.Sprintf("%d %s: the publisher has it back", u.ReplyCode, u.ReplyText)
	}
	if u.QueueExists {
		exists = "exists"
	}
	return []string{what, confirm, ret, exists}
}

// prefetchTable shows who got what in each prefetch run.
func prefetchTable(version string, runs []jobRun) render.Table {
	t := render.Table{
		Title: fmt.Sprintf("%d jobs, a slow worker (%v a job) and a fast one (%v), same prefetch%s", prefetchJobs, slowWork, fastWork, onBroker(version)),
		Header: []string{"prefetch", "slow: jobs", "slow: most held unacked", "fast: jobs", "fast: most held unacked",
			"all done after (lesson time)"},
		Notes: []string{
			"Both workers consume before the jobs are published, and start work once all are in (a burst), so the split shows the prefetch, " +
				"not how fast this machine publishes; the broker hands a job to a consumer with room under its prefetch, in turn. " +
				"\"Held\" counts deliveries that reached the worker's process and were not acked yet: the broker never lets it exceed the prefetch.",
			"Prefetch 1 is the seed's: each worker holds one job, so the fast one takes most. A larger prefetch parks jobs behind the slow handler " +
				"while the fast worker runs out; unlimited (0) deals the jobs out alternately, and the run lasts as long as the slow worker's half. " +
				"Which worker gets which job varies with timing; the split and the held counts are the robust facts.",
		},
	}
	for i, r := range runs {
		slow, fast := r.workers[0], r.workers[1]
		t.Rows = append(t.Rows, []string{prefetchName(prefetchSettings[i]),
			fmt.Sprint(slow.got.Load()), fmt.Sprint(slow.maxHeld.Load()),
			fmt.Sprint(fast.got.Load()), fmt.Sprint(fast.maxHeld.Load()),
			r.took.Round(10 * time.Millisecond).String()})
	}
	return t
}

// seedTable compares seed 003's claim with what its worker does.
func seedTable(version string, runs []jobRun) render.Table {
	t := render.Table{
		Title:  fmt.Sprintf("The birthday scheduler's claim: \"~%d msgs/min at prefetch %d, %v processing\"%s", seedClaim, seedPrefetch, seedWork, onBroker(version)),
		Header: []string{"consumer", "handlers at once (measured)", "most held unacked", "jobs", "took (lesson time)", "msgs per lesson minute"},
		Notes: []string{
			fmt.Sprintf("Scaled: %d jobs instead of a steady stream; the %v handler is lesson time (--speed shrinks it) and the rate is per lesson minute. "+
				"At %v a job one handler does %d a minute and %d concurrent handlers %d: the seed's %d fits neither.",
				seedJobs, seedWork, seedWork, int(time.Minute/seedWork), seedPrefetch, seedPrefetch*int(time.Minute/seedWork), seedClaim),
			"Prefetch lets the broker push 5 jobs ahead; how many run at once is the client's doing. The seed is TypeScript on amqp-connection-manager over amqplib, " +
				"which calls the consume callback for each delivery without awaiting it (BaseChannel.dispatchMessage): an async handler there runs up to prefetch jobs at once, " +
				"so its QUEUE_CONCURRENCY=5 is the prefetch and, in effect, the concurrency too: the goroutine-per-delivery row is that seed. " +
				"amqp091-go hands one consumer's deliveries to one Go channel, and a loop over it runs one handler at a time: the first row. " +
				"Throughput is set by how many handlers run at once and how long each takes; prefetch must be at least that many, or handlers wait for deliveries.",
		},
	}
	for _, r := range runs {
		w := r.workers[0]
		how := "one delivery loop (amqp091-go's default shape)"
		if w.concurrency > 1 {
			how = fmt.Sprintf("a goroutine per delivery, at most %d", w.concurrency)
		}
		t.Rows = append(t.Rows, []string{how, fmt.Sprint(w.maxBusy.Load()), fmt.Sprint(w.maxHeld.Load()), fmt.Sprint(r.jobs),
			r.took.Round(10 * time.Millisecond).String(), fmt.Sprintf("%.0f", r.perMinute())})
	}
	return t
}

package q18

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// clock is lesson time d from a variant's start as m:ss.
func clock(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%s%d:%02d", sign, int(d.Minutes()), int(d.Seconds())%60)
}

// signed is clock(d) with a + on a positive d.
func signed(d time.Duration) string {
	if d > 0 {
		return "+" + clock(d)
	}
	return clock(d)
}

// sendTimes lists row id's sends as m:ss, "-" when it was never sent.
func (o outcome) sendTimes(id string) string {
	if len(o.sends[id]) == 0 {
		return "-"
	}
	var s []string
	for _, at := range o.sends[id] {
		s = append(s, clock(at))
	}
	return strings.Join(s, ", ")
}

// earlyBy is how early row r was first sent against its due time (≤ 0:
// not early), and whether it was sent at all.
func (o outcome) earlyBy(r row) (time.Duration, bool) {
	if len(o.sends[r.id]) == 0 {
		return 0, false
	}
	return time.Duration(r.due)*birthday.Tick - o.sends[r.id][0], true
}

// earlyTable is part (a): each message's due, publish and send times.
func earlyTable(outs []outcome) render.Table {
	t := render.Table{
		Title:  "(a) Sent against due: the cron's one-hour look-ahead",
		Header: []string{"cron", "message", "key", "due", "published", "sent", "sent − due"},
		Notes: []string{"Times are lesson time (m:ss) from each cron's first tick; a send takes " +
			clock(sendTime) + ". Negative: sent that long before it was due.",
		},
	}
	for _, o := range outs {
		worst := time.Duration(0)
		for _, r := range o.rows {
			early, _ := o.earlyBy(r)
			worst = max(worst, early)
			sent := "-"
			if len(o.sends[r.id]) > 0 {
				sent = signed(-early)
			}
			t.Rows = append(t.Rows, []string{cronName(o.name), r.id, r.kind,
				clock(time.Duration(r.due) * birthday.Tick), clock(o.published[r.id]), o.sendTimes(r.id), sent})
		}
		t.Notes = append(t.Notes, earlyNote(o, worst))
	}
	t.Notes = append(t.Notes, "The other fix keeps the look-ahead and has the worker defer: "+
		"it holds a message until its due time (a delay queue or a timer, Q10 and Q11).")
	return t
}

// earlyNote sums up one cron of part (a).
func earlyNote(o outcome, worst time.Duration) string {
	n := countEarly(o)
	if n == 0 {
		return fmt.Sprintf("%s: none of %d sent early.", cronName(o.name), len(o.rows))
	}
	return fmt.Sprintf("%s: %d of %d sent early, by up to %s.",
		cronName(o.name), n, len(o.rows), clock(worst))
}

func countEarly(o outcome) (n int) {
	for _, r := range o.rows {
		if early, sent := o.earlyBy(r); sent && early > 0 {
			n++
		}
	}
	return n
}

// cronName is how the early-send table names a variant.
func cronName(name string) string {
	if name == "early" {
		return "due within 1 h (seed)"
	}
	return "due now (fix)"
}

// stuckTable is part (b): the three orders, counted side by side.
func stuckTable(outs []outcome) render.Table {
	t := render.Table{
		Title: "(b) A failed publish: QUEUED first, publish first, outbox",
		Header: []string{"order", "published", "sent once", "sent twice", "absorbed",
			"stuck QUEUED", "SENT"},
		Notes: []string{
			fmt.Sprintf("Each ran %d more cron ticks after the failed publish; the counts are the "+
				"store's (status rows) and the workers' (sends).", stuckTicks),
			"QUEUED first: the row is QUEUED, its message never left, and no tick picks it again.",
			"Publish first: the failed tick left its rows CREATED; the next published them again " +
				"and the atomic claim absorbed the copy already out. A worker may see a row " +
				"before it is QUEUED, so it waits for the mark, holding its prefetch slot.",
			"Outbox: rows and entries in one transaction; the relay marks an entry relayed only " +
				"after the broker confirmed it, so a failed publish is retried, not lost. A relay " +
				"that dies between the confirm and the mark publishes again: the claim absorbs it.",
			"amqp-connection-manager 5.0.0, the seed's library: a publish made while its " +
				"connection is down is kept in memory and sent after the reconnect, 60 s later " +
				"with the seed's settings (src/ChannelWrapper.ts: \"Leave the message in the " +
				"queue and we'll try again when we reconnect\"): M2. Its row is QUEUED meanwhile " +
				"and the message only in the process's memory: a scheduler that dies in that " +
				"minute loses it.",
			"A publish already sent when the connection drops is rejected, as Q2's is: amqplib " +
				"2.3.1 fails every unconfirmed publish with \"channel closed\" as its channel " +
				"closes (lib/channel.js), before the wrapper sees the channel go. Measured on " +
				"RabbitMQ 3.10.8 (scripts/amqplib/acm-drop.js): 2,000 publishes in flight, all " +
				"2,000 rejected, and 1,296 to 2,000 of them in the queue all the same (four " +
				"runs); the 10 published after the drop were held and confirmed after the " +
				"reconnect.",
		},
	}
	names := map[string]string{"queued_first": "QUEUED, then publish (seed)",
		"publish_first": "publish, then QUEUED", "outbox": "outbox + relay",
		"library_buffer": "seed's order + its library"}
	for _, o := range outs {
		t.Rows = append(t.Rows, []string{names[o.name], strconv.Itoa(o.messages()),
			strconv.Itoa(o.sentOnce()), strconv.Itoa(o.sentTwice()), strconv.Itoa(o.absorbed),
			strconv.Itoa(o.counts[store.Queued]), strconv.Itoa(o.counts[store.Sent])})
	}
	return t
}

// routingTable is part (c): what the publisher was told, where each went.
func routingTable(told []routed, o outcome, on string) render.Table {
	t := render.Table{
		Title:  "(c) Routing on the topic exchange birthday.messages (" + on + ")",
		Header: []string{"message", "key", "mandatory", "the publisher was told", "sent", "row"},
		Notes: []string{
			"Bindings: birthday and anniversary to birthday.messages.queue; nothing for wedding.",
			"Without mandatory an unroutable message is acked and dropped: a confirm means the " +
				"broker took responsibility, not that a queue has it. Mandatory makes it return the " +
				"message (basic.return, 312 NO_ROUTE) before the ack; an alternate exchange " +
				"(alternate-exchange argument) would keep it in a queue of its own instead.",
			"Either way the row stays QUEUED: with mandatory the scheduler knows and can alert.",
		},
	}
	for _, r := range told {
		sent := "no"
		if len(o.sends[r.id]) > 0 {
			sent = "yes"
		}
		t.Rows = append(t.Rows, []string{r.id, r.key, strconv.FormatBool(r.mandatory), r.answer,
			sent, string(o.status[r.id])})
	}
	return t
}

// twiceTable is part (d): the double publish against both claims.
func twiceTable(outs []outcome) render.Table {
	t := render.Table{
		Title: "(d) The scheduler publishes each row twice; two workers, prefetch 5",
		Header: []string{"worker's check", "rows", "published", "sent once", "sent twice",
			"absorbed"},
		Notes: []string{
			"Check-then-act reads the row, then sends: two copies in two workers' hands both read " +
				"QUEUED. The atomic claim is one UPDATE … WHERE status='QUEUED': one copy wins.",
			"The lab holds each worker between its check and its send until both copies of the " +
				"row are checked: the race's window, held open so it shows every run. (The seed " +
				"runs five handlers at once; at 600× a send takes 3 ms real and the copies seldom " +
				"overlap: three runs without the hold sent 0, 0 and 1 of 5 twice.)",
		},
	}
	for _, o := range outs {
		w := atomicClaim.name
		if o.name == "check_then_act" {
			w = checkThenAct.name
		}
		t.Rows = append(t.Rows, []string{w, strconv.Itoa(len(o.rows)), strconv.Itoa(o.messages()),
			strconv.Itoa(o.sentOnce()), strconv.Itoa(o.sentTwice()), strconv.Itoa(o.absorbed)})
	}
	return t
}

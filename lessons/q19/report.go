package q19

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/birthday"
)

// secs is lesson time d in seconds, one decimal.
func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// classifyTable is part (a): each attempt, its error and what followed.
func classifyTable(rows []attemptRow) render.Table {
	t := render.Table{
		Title:  "(a) Each attempt, its class and what followed",
		Header: []string{"task", "attempt", "at", "error", "then", "next try after"},
		Notes: []string{"Times are lesson time from the part's start; an attempt takes " +
			secs(sendTime) + ". The next try comes its wait after the failure, through the " +
			"wait queue of that delay (TTL, then dead-lettered back to the main queue).",
			"Permanent errors are parked at once with the reason; a transient one after " +
				strconv.Itoa(birthday.MaxRetries) + " retries (6 attempts) is parked with the last error.",
		},
	}
	for i, r := range rows {
		next := "-"
		for _, later := range rows[i+1:] {
			if later.task == r.task {
				next = secs(later.at - r.at - sendTime)
				break
			}
		}
		errText, then := "-", "sent"
		if r.err != nil {
			errText = short(r.err.Error())
			then = outcome(r)
		}
		t.Rows = append(t.Rows, []string{r.task, strconv.Itoa(r.attempt), secs(r.at), errText,
			then, next})
	}
	return t
}

// outcome says what Decide did with failed attempt r.
func outcome(r attemptRow) string {
	switch retries := r.attempt - 1; {
	case flow.IsPermanent(r.err):
		return "DLQ at once (permanent)"
	case retries >= birthday.MaxRetries:
		return fmt.Sprintf("DLQ (%d retries spent)", retries)
	default:
		return fmt.Sprintf("wait %s (retry %d)", birthday.Delay(retries), retries+1)
	}
}

// short is an error's text up to its first colon.
func short(s string) string {
	head, _, _ := strings.Cut(s, ":")
	return head
}

// stallTable is part (b): the two ways to wait, side by side.
func stallTable(out []stalled, version string) render.Table {
	t := render.Table{
		Title: "(b) Waiting out a rate limit: a timer before the nack, or a wait queue",
		Header: []string{"strategy", "H tried at", "attempts", "count read", "redelivered",
			"all sent by"},
		Notes: []string{fmt.Sprintf("Five messages are rate-limited for the first %s (S1–S5, "+
			"then W1–W5); H (SH, WH) is healthy and published right behind them. Attempts: at "+
			"the five; all sent by: the last of them.", limitFor),
			"Timer, then nack: each waiting S holds a slot (unacked) for its whole delay, so the " +
				"five hold all five and H waits. RabbitMQ puts a requeued message back at its " +
				"original position where it can (the consumer acknowledgements guide), ahead of " +
				"H, so on a classic queue H can wait until the limit ends; memory's requeue goes " +
				"to the tail, so there H gets the first slot freed.",
			"Count read: the retry count in the message's own header. A requeue changes nothing " +
				"in the message, so it stays 0, the delay stays 2 s and the backoff never backs " +
				"off; all a classic queue adds is the redelivered flag (a quorum queue counts " +
				"x-delivery-count on 3.10.8 but not a nack on 4.3.6; on the broker the next table " +
				"measures it). The wait " +
				"queues' worker writes its count as it republishes.",
			"A crash while the timer runs redelivers the message at once: the wait is lost.",
		},
	}
	if version != "" {
		t.Notes = append(t.Notes, fmt.Sprintf("Quorum queue: the seed's own type, the same "+
			"five slots and timer (Q1–Q5, QH). On RabbitMQ %s a requeued message goes %s. "+
			"x-delivery-count: the largest a delivery carried (none: the broker wrote none "+
			"after a nack).", version, rabbit.RequeuePlace(true, false, version)))
	}
	for _, m := range out {
		first := "never"
		if m.firstH >= 0 {
			first = secs(m.firstH)
		}
		count := "- (none)"
		if m.maxCount >= 0 {
			count = strconv.Itoa(m.maxCount)
		}
		if m.quorum {
			count += ", x-delivery-count " + upTo(m.deliveryCount)
		}
		name := m.name
		if version != "" && !m.quorum { // on the broker, beside the quorum row
			name += ", classic queue"
		}
		t.Rows = append(t.Rows, []string{name, first, strconv.Itoa(m.attempts), count,
			strconv.Itoa(m.redelivered), secs(m.lastSent)})
	}
	return t
}

// upTo is the largest count seen, "none" where no delivery carried one.
func upTo(n int) string {
	if n < 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

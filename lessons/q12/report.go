package q12

import (
	"fmt"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
)

// q12Table puts the two runs side by side.
func q12Table(env *lesson.Env, without, with q12Result) render.Table {
	row := func(name string, f func(q12Result) int) []string {
		return []string{name, fmt.Sprint(f(without)), fmt.Sprint(f(with))}
	}
	o := q12Outage
	return render.Table{
		Title:  "Without and with a circuit breaker",
		Header: []string{"", "no breaker (n..)", "breaker (b..)"},
		Rows: [][]string{
			row("calls to the mail service", func(r q12Result) int { return r.service.Calls }),
			row("calls while it was down", func(r q12Result) int { return r.service.CallsDown }),
			row("calls while it hung", func(r q12Result) int { return r.service.CallsHung }),
			row("calls cut off at the 3 s timeout", func(r q12Result) int { return r.timeouts }),
			row("fast fails by the breaker", func(r q12Result) int { return r.rejected }),
			row("deliveries (calls + fast fails)", func(r q12Result) int { return r.deliveries }),
			row(fmt.Sprintf("most deliveries of one mail (of %d)", q12MaxDeliveries), func(r q12Result) int { return r.most }),
			row("mails delivered", func(r q12Result) int { return r.service.Delivered }),
			row("mails in the DLQ", func(r q12Result) int { return r.dead }),
			{"time to drain", render.Stamp(without.drain.Milliseconds()), render.Stamp(with.drain.Milliseconds())},
		},
		Notes: []string{
			fmt.Sprintf("The service was down from %s to %s of each run; until %s a call hung %s before its 503. Failed mails waited %s in email_queue_wait.",
				render.Stamp(o.From.Milliseconds()), render.Stamp(o.Until.Milliseconds()), render.Stamp(o.SlowUntil.Milliseconds()), o.Hang, q12Wait),
			fmt.Sprintf("A fast fail spends a delivery as a failed call does: the lab parks a mail after %d deliveries, whatever they were, as the seed's text says "+
				"(its code, x-death[0].count ?? 1 >= 15, would park after 16: Q13).", q12MaxDeliveries),
			"Breaker (the seed's): timeout 3s, opens above 20 % failed, reset 10s. " + q12NotFromSeed(env.Plan.Work),
			"The breaker keeps the dead service quiet; the price is up to one reset timeout (10 s) of waiting after it is back.",
		},
	}
}

// q12NotFromSeed names every setting the lesson adds to the seed's, with
// the time a call takes (work) in this run.
func q12NotFromSeed(work time.Duration) string {
	return fmt.Sprintf("Not from the seed: opossum's defaults for what it leaves unset (no minimum volume, a 10s rolling window in 10 buckets), "+
		"the outage and its %s hang, and the workload (%d mails, one every %s, a call takes %s).", q12Outage.Hang, q12Mails, q12Every, work)
}

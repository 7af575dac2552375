package q24

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/raffle"
)

// Outages are part (a)'s DB outages, from the moment the users arrive.
// None sits near the 20 s edge, where a broker's lateness (a TTL is real
// time, and a late delivery finds the DB back) would decide the fate;
// "last began" measures the edge.
var Outages = []time.Duration{5 * time.Second, 15 * time.Second, 30 * time.Second, 45 * time.Second}

// usersPerOutage is how many users each outage meets.
const usersPerOutage = 2

// outageTask is user i of the run that meets outage o: "a15-2".
func outageTask(o time.Duration, i int) string {
	return fmt.Sprintf("a%02d-%d", int(o.Seconds()), i)
}

// outageOf is the outage task meets: its group's ("a15" → 15 s).
func outageOf(task string) time.Duration {
	var s, i int
	if _, err := fmt.Sscanf(task, "a%d-%d", &s, &i); err != nil {
		return 0
	}
	return time.Duration(s) * time.Second
}

// recovery is part (a): users arrive while the DB is down for 5, 15,
// 30 and 45 s; the seed's fixed 10 s retry saves those whose third delivery
// (20 s on) finds it back, and parks the rest.
func recovery(ctx context.Context, env *lesson.Env) error {
	env.Phase("(a) the fixed 10 s backoff against DB outages of 5, 15, 30 and 45 s")
	r, err := open(ctx, env, "a", outageOf)
	if err != nil {
		return err
	}
	defer r.close(ctx)
	var tasks []string
	for _, o := range Outages {
		for i := range usersPerOutage {
			tasks = append(tasks, outageTask(o, i+1))
		}
	}
	err = r.consume(ctx, []flow.Consumer{r.seedConsumer(attemptsReading, toDLQ)}, r.viaAPI(tasks...))
	if err != nil {
		return err
	}
	env.Report(recoveryTable(r.all()))
	return nil
}

// LatelySaved is part (a)'s users of an outage the fixed retry cannot
// outlast (longer than its 20 s of hops) whose last delivery ended after
// the outage did: the DB is read as a delivery begins, a moment between
// its started event and its end, so such a delivery may have found the
// DB back. Late hops on a loaded machine save such users, as
// recoveryTable's note says. In exact lesson time there are none. The
// end, not the started event, is the bound that misses none: at the
// lesson's speed a goroutine's stall of a fraction of a real second
// between the two is seconds of lesson time.
func LatelySaved(events []lab.Event) []string {
	reach := time.Duration(MaxRetries-1) * raffle.RetryTTL // the third delivery, by the arithmetic
	start, ended := int64(-1), map[string]int64{}
	for _, e := range events {
		if outageOf(e.Task) == 0 {
			continue
		}
		switch e.Kind {
		case lab.Started:
			if start < 0 {
				start = e.TMs // part (a)'s clock starts at its first delivery
			}
		case lab.Succeeded, lab.Failed:
			ended[e.Task] = e.TMs
		}
	}
	var out []string
	for task, at := range ended {
		if o := outageOf(task); o > reach && time.Duration(at-start)*time.Millisecond >= o {
			out = append(out, task)
		}
	}
	slices.Sort(out)
	return out
}

// Outcome is what part (a) measured for one outage.
type Outcome struct {
	Outage   time.Duration
	Saved    int           // users inserted
	Parked   int           // users rejected to raffle_dlq
	LastTry  time.Duration // when the last delivery of the group started
	Attempts int           // deliveries of the group
	// LongestHop is the longest a user of the group waited between two
	// of its deliveries: the TTL's 10 s, plus what the broker and the
	// consumer ahead of it took. It decides the fate near the edge.
	LongestHop time.Duration
}

// Recovery is part (a)'s measure, one Outcome per outage.
func Recovery(rows []attemptRow) []Outcome {
	var out []Outcome
	for _, o := range Outages {
		c := Outcome{Outage: o}
		prev := map[string]time.Duration{} // each user's last delivery so far
		for _, row := range rows {
			if outageOf(row.task) != o {
				continue
			}
			if at, ok := prev[row.task]; ok {
				c.LongestHop = max(c.LongestHop, row.at-at)
			}
			prev[row.task] = row.at
			c.Attempts++
			c.LastTry = max(c.LastTry, row.at)
			if row.err == nil {
				c.Saved++
			} else if attemptsReading.exhausted(row.retries) {
				c.Parked++
			}
		}
		out = append(out, c)
	}
	return out
}

func recoveryTable(rows []attemptRow) render.Table {
	t := render.Table{
		Title:  "(a) The recovery window of a fixed 10 s retry (3 deliveries)",
		Header: []string{"DB outage", "users", "saved", "to raffle_dlq", "deliveries", "last began", "longest hop"},
		Notes: []string{
			"Every retry waits raffle_retry_10s's TTL, 10 s: the three deliveries start at " +
				"0, 10 and 20 s. An outage the last one outlives parks every user; a growing " +
				"wait (Q07's 1 s, 2 s …) or more attempts would stretch the window.",
			"Which fate depends on timing: a hop is the TTL plus the broker's and the " +
				"consumer's time (one consumer takes the users in turn), and a TTL is real " +
				"time. On a loaded machine the hops grow, and a user whose third delivery " +
				"begins after its outage is saved. The 30 s outage's users need hops of " +
				"15 s for that; 150 runs at once on 3.10.8 at 10× measured 13 to 15 s, and " +
				"some were saved. The fate follows \"last began\", not the arithmetic; alone, " +
				"the hops stay near 10 s and the 30 s outage parks every user.",
		},
	}
	for _, c := range Recovery(rows) {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%d s", int(c.Outage.Seconds())),
			fmt.Sprint(usersPerOutage), fmt.Sprint(c.Saved), fmt.Sprint(c.Parked),
			fmt.Sprint(c.Attempts), seconds(c.LastTry), seconds(c.LongestHop)})
	}
	return t
}

// seconds prints d in lesson seconds, to a tenth.
func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// The users of part (b), one per reading.
const (
	readAttempts = "b-attempt"
	readRetries  = "b-retries"
)

// readings is part (b): the DB never comes back; the same consumer reads
// "max 3 attempts" each way, and the deliveries are counted.
func readings(ctx context.Context, env *lesson.Env) error {
	env.Phase("(b) \"max 3 attempts\" with x-retries absent at first: both readings")
	r, err := open(ctx, env, "b", func(string) time.Duration { return time.Hour })
	if err != nil {
		return err
	}
	defer r.close(ctx)
	byTask := r.seedConsumer(attemptsReading, toDLQ)
	other := r.seedConsumer(retriesReading, toDLQ).Handle
	first := byTask.Handle
	byTask.Handle = func(ctx context.Context, d *flow.Delivery) flow.Decision {
		if d.Task == readRetries {
			return other(ctx, d)
		}
		return first(ctx, d)
	}
	publish := r.viaAPI(readAttempts, readRetries)
	if err := r.consume(ctx, []flow.Consumer{byTask}, publish); err != nil {
		return err
	}
	env.Report(readingsTable(r.all()))
	return nil
}

// Deliveries counts task's deliveries and lists the x-retries each carried.
func Deliveries(rows []attemptRow, task string) (n int, retries []int) {
	for _, row := range rows {
		if row.task == task {
			n++
			retries = append(retries, row.retries)
		}
	}
	return n, retries
}

func readingsTable(rows []attemptRow) render.Table {
	t := render.Table{
		Title:  "(b) How many deliveries \"max 3 attempts\" allows",
		Header: []string{"user", "reading", "deliveries", "x-retries seen"},
		Notes: []string{
			"The seed's first delivery has no x-retries; publish_retry writes attempt+1. " +
				"Read as attempts, 3 deliveries; read as retries, 4 (and 30 s, not 20).",
		},
	}
	for _, c := range []struct {
		task string
		read reading
	}{{readAttempts, attemptsReading}, {readRetries, retriesReading}} {
		n, seen := Deliveries(rows, c.task)
		t.Rows = append(t.Rows, []string{c.task, c.read.rule, fmt.Sprint(n), joinInts(seen)})
	}
	return t
}

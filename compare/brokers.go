package compare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// Two brokers: qlab compare N --broker URL --broker URL runs lesson N on
// each broker (the same tasks, plan and speed) and lists where they
// differ: fates, attempts, the x-death and x-delivery-count each delivery
// carried, retries held back past their delay, and a run one broker
// refused. It is how the lab shows what RabbitMQ 4.x changed against
// 3.10.8, measured rather than quoted.

// BrokerConfig chooses how two brokers are compared.
type BrokerConfig struct {
	Speed   float64          // lesson time per real time; 0: the lesson's own (SpeedOf)
	Plan    *lab.Plan        // the runs' workload; default lab.DefaultPlan()
	Brokers [2]rabbit.Broker // the two brokers, each probed (Version known)
	Repeat  int              // runs per broker (default DefaultRepeat)
}

// BrokerReport is a finished comparison of two brokers.
type BrokerReport struct {
	Lesson  string         `json:"lesson"`
	Speed   float64        `json:"speed"`
	Repeat  int            `json:"repeat"`
	Brokers [2]string      `json:"brokers"` // each broker described, password redacted
	Tables  []render.Table `json:"tables"`
	// Runs holds each broker's runs, in the order of BrokerConfig.Brokers.
	Runs [2][]BrokerRun `json:"-"`
}

// BrokerRun is one run of the lesson on one broker.
type BrokerRun struct {
	Side
	// Carried is what the deliveries of each task carried, in the order
	// the run's readers accepted them.
	Carried map[string][]Carried
	// Err is why the run failed (a declaration the broker refused, say);
	// nil for a run that finished.
	Err error
}

// Carried is the broker's counters on one delivery: the x-death total
// (every entry's count), and a quorum queue's x-delivery-count and
// RabbitMQ 4.3's x-acquired-count, -1 where the delivery had none.
type Carried struct {
	Deaths, DeliveryCount, Acquired int64
}

// carriedOf reads the counters of one delivery's headers.
func carriedOf(h amqp.Table) Carried {
	c := Carried{Deaths: rabbit.ReadDeaths(h).Total(), DeliveryCount: -1, Acquired: -1}
	if n, ok := rabbit.HeaderCount(h, rabbit.DeliveryCountHeader); ok {
		c.DeliveryCount = n
	}
	if n, ok := rabbit.HeaderCount(h, rabbit.AcquiredCountHeader); ok {
		c.Acquired = n
	}
	return c
}

// Labels names each broker for the tables' headings: "RabbitMQ 3.10.8";
// two brokers of one version are told apart by their host.
func Labels(bs [2]rabbit.Broker) [2]string {
	var out [2]string
	for i, b := range bs {
		out[i] = "RabbitMQ " + b.Version
	}
	if out[0] == out[1] {
		for i, b := range bs {
			out[i] += " (" + hostOf(b.URL) + ")"
		}
	}
	return out
}

// hostOf is the host:port of a broker URL, never its credentials.
func hostOf(rawURL string) string {
	u, err := amqp.ParseURI(rabbit.SplitURLs(rawURL)[0])
	if err != nil {
		return rabbit.Redact(rawURL)
	}
	return fmt.Sprintf("%s:%d", u.Host, u.Port)
}

// RunBrokers runs lesson l on each of cfg.Brokers cfg.Repeat times,
// alternating brokers, and reduces the runs to tables. A run one broker
// fails (a declaration it refuses) is a row of the comparison, not an
// error; RunBrokers fails only when every run failed on both, or ctx
// ended.
func RunBrokers(ctx context.Context, l lesson.Lesson, cfg BrokerConfig) (BrokerReport, error) {
	if l.Runner(lab.Rabbit) == nil {
		return BrokerReport{}, lesson.ErrNoBackend{Lesson: l, Backend: lab.Rabbit}
	}
	if cfg.Speed == 0 {
		cfg.Speed = SpeedOf(l)
	}
	if cfg.Repeat <= 0 {
		cfg.Repeat = DefaultRepeat
	}
	labels := Labels(cfg.Brokers)
	rep := BrokerReport{Lesson: l.Slug(), Speed: cfg.Speed, Repeat: cfg.Repeat}
	for i, b := range cfg.Brokers {
		rep.Brokers[i] = labels[i] + " at " + rabbit.Redact(b.URL)
	}
	for range cfg.Repeat {
		for i, b := range cfg.Brokers {
			r := runOnBroker(ctx, l, cfg, b.URL)
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			r.Label = labels[i]
			rep.Runs[i] = append(rep.Runs[i], r)
		}
	}
	if failedAll(rep.Runs[0]) && failedAll(rep.Runs[1]) {
		return rep, fmt.Errorf("the lesson failed on both brokers: %w", rep.Runs[0][0].Err)
	}
	a, b := sidesOf(rep.Runs[0]), sidesOf(rep.Runs[1])
	rep.Tables = []render.Table{
		DifferencesTable(rep.Runs[0], rep.Runs[1]),
		Tasks(a, b, l.Parity.TimingSensitive),
		CarriedTable(rep.Runs[0], rep.Runs[1]),
		DelayTable(nil, a, b),
	}
	return rep, nil
}

// runOnBroker is one run of l on the broker at url, its events and the
// counters every delivery carried recorded.
func runOnBroker(ctx context.Context, l lesson.Lesson, cfg BrokerConfig, url string) BrokerRun {
	var mu sync.Mutex
	run := BrokerRun{Carried: map[string][]Carried{}}
	seen := func(c lesson.Carried) {
		mu.Lock()
		defer mu.Unlock()
		run.Carried[c.Task] = append(run.Carried[c.Task], carriedOf(c.Headers))
	}
	side, _, err := runSide(ctx, l, Config{Speed: cfg.Speed, Broker: url},
		lesson.Options{Backend: lab.Rabbit, Plan: cfg.Plan, Deliveries: seen})
	run.Side = side
	if err != nil {
		run.Err = errors.New(rabbit.RedactIn(err.Error(), url))
	}
	return run
}

func failedAll(runs []BrokerRun) bool {
	for _, r := range runs {
		if r.Err == nil {
			return false
		}
	}
	return true
}

func sidesOf(runs []BrokerRun) []Side {
	out := make([]Side, len(runs))
	for i, r := range runs {
		out[i] = r.Side
	}
	return out
}

// DifferencesTable has a row for each thing the two brokers did
// differently, over all their runs: a run one of them failed, a task's
// fate or attempts, the counters its deliveries carried, and its retries
// held back far past their delay (a message ahead of them in the queue,
// not a slow timer: see heldBack).
func DifferencesTable(a, b []BrokerRun) render.Table {
	t := render.Table{
		Title:  "Where the two brokers differ",
		Header: []string{"task", "what", a[0].Name(), b[0].Name()},
	}
	if ea, eb := runErrors(a), runErrors(b); ea != eb {
		t.Rows = append(t.Rows, []string{"-", "the run", ea, eb})
	}
	la, lb := ledgers(sidesOf(a)), ledgers(sidesOf(b))
	for _, id := range taskIDs(append(la, lb...)...) {
		ra, rb := taskRunsOf(la, id), taskRunsOf(lb, id)
		fa, fb := ra.fates(), rb.fates()
		if fa != fb {
			t.Rows = append(t.Rows, []string{id, "fate", fa, fb})
		}
		if fa == "-" || fb == "-" {
			continue // one broker never had the task: its fate says so, and nothing else compares
		}
		if na, nb := ra.attempts(), rb.attempts(); na != nb {
			t.Rows = append(t.Rows, []string{id, "attempts", na, nb})
		}
		for _, c := range counters {
			if readsDiffer(a, b, id, c.read) {
				t.Rows = append(t.Rows, []string{id, c.name + " per delivery", series(a, id, c.read), series(b, id, c.read)})
			}
		}
		if ha, hb := heldBackOf(a, id), heldBackOf(b, id); ha != hb {
			t.Rows = append(t.Rows, []string{id, "retries held back", ha, hb})
		}
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"-", "nothing", "fates, attempts, counters, held-back retries", "the same"})
	}
	t.Notes = append(t.Notes,
		"Counters: what the broker wrote on each delivery of the task, in order (- none).",
		"Held back: retries that came back later than half their delay again (and 100 ms of real time),",
		"  behind a longer one.")
	if len(a) > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("Over %d runs per broker: a value that changed between runs reads done/dead, 5–6 or a|b.", len(a)))
	}
	return t
}

// runErrors is how the runs on one broker ended: "finished", or each
// distinct error (a refused declaration reads as the broker's reply).
func runErrors(runs []BrokerRun) string {
	var errs []string
	for _, r := range runs {
		e := "finished"
		if r.Err != nil {
			e = "failed: " + r.Err.Error()
		}
		if !slices.Contains(errs, e) {
			errs = append(errs, e)
		}
	}
	return strings.Join(errs, " | ")
}

// readsDiffer reports whether counter read told the brokers apart on
// task: on some delivery both runs made (the first run of each that
// delivered it), one read a value the other did not. More deliveries on
// one side is the attempts row's difference, not the counter's.
func readsDiffer(a, b []BrokerRun, task string, read func(Carried) int64) bool {
	ca, cb := firstCarried(a, task), firstCarried(b, task)
	for i := range min(len(ca), len(cb)) {
		if read(ca[i]) != read(cb[i]) {
			return true
		}
	}
	return false
}

func firstCarried(runs []BrokerRun, task string) []Carried {
	for _, r := range runs {
		if cs := r.Carried[task]; len(cs) > 0 {
			return cs
		}
	}
	return nil
}

// A counter is one number the broker writes on a delivery.
type counter struct {
	name string
	read func(Carried) int64
}

var counters = []counter{
	{"x-death", func(c Carried) int64 { return c.Deaths }},
	{rabbit.DeliveryCountHeader, func(c Carried) int64 { return c.DeliveryCount }},
	{rabbit.AcquiredCountHeader, func(c Carried) int64 { return c.Acquired }},
}

// maxSeries is how many readings a series shows before it elides.
const maxSeries = 10

// series is the counter read on each delivery of task, per run, the runs'
// distinct series joined by " | ": "0 1 2 3", "- - -" (never written),
// "" when no run delivered the task.
func series(runs []BrokerRun, task string, read func(Carried) int64) string {
	var out []string
	for _, r := range runs {
		cs := r.Carried[task]
		if len(cs) == 0 {
			continue
		}
		s := seriesOf(cs, read)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " | ")
}

func seriesOf(cs []Carried, read func(Carried) int64) string {
	var vals []string
	for _, c := range cs {
		v := "-"
		if n := read(c); n >= 0 {
			v = fmt.Sprint(n)
		}
		vals = append(vals, v)
	}
	if len(vals) > maxSeries {
		n := len(vals)
		vals = append(append(vals[:maxSeries-3:maxSeries-3], "…"), vals[n-2:]...)
		vals = append(vals, fmt.Sprintf("(%d)", n))
	}
	return strings.Join(vals, " ")
}

// heldBackOf is how many of task's retries were held back, per run:
// "0", "2", or "1–2".
func heldBackOf(runs []BrokerRun, task string) string {
	var n []int
	for _, r := range runs {
		held := 0
		for _, d := range r.Delays() {
			if d.Task == task && heldBack(d, r.Speed) {
				held++
			}
		}
		n = append(n, held)
	}
	return intRange(n)
}

// heldFloor is how late, in real time, a retry must be before it counts
// as held back: below it a busy machine's scheduling explains the delay.
const heldFloor = 100 * time.Millisecond

// heldBack reports whether retry d came back later than half its delay
// again, and later than heldFloor of real time at speed: a message ahead
// of it in the queue held it, not a slow timer.
func heldBack(d Delay, speed float64) bool {
	late := d.Observed - d.Configured
	return late > d.Configured/2 && time.Duration(float64(late)/speed) > heldFloor
}

// CarriedTable lists, for each task whose deliveries carried a counter on
// either broker, what each counter read on each delivery.
func CarriedTable(a, b []BrokerRun) render.Table {
	t := render.Table{
		Title:  "What each delivery carried",
		Header: []string{"task", "counter", a[0].Name(), b[0].Name()},
		Notes: []string{
			"x-death: the sum of its entries' counts (the broker keeps one entry per queue and reason).",
			"x-delivery-count, x-acquired-count: written by a quorum queue; RabbitMQ 4.3 added x-acquired-count and",
			"  counts only failed deliveries in x-delivery-count (a basic.nack with requeue is not one).",
		},
	}
	tasks := map[string]bool{}
	for _, runs := range [][]BrokerRun{a, b} {
		for _, r := range runs {
			for id := range r.Carried {
				tasks[id] = true
			}
		}
	}
	for _, id := range order(a, b, tasks) {
		for _, c := range counters {
			sa, sb := series(a, id, c.read), series(b, id, c.read)
			if written(sa) || written(sb) {
				t.Rows = append(t.Rows, []string{id, c.name, orDash(sa), orDash(sb)})
			}
		}
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"-", "none", "no delivery carried a counter", "no delivery carried a counter"})
	}
	return t
}

// written reports whether a series read a value on any delivery.
func written(s string) bool {
	for _, f := range strings.Fields(s) {
		if strings.Trim(f, "0123456789") == "" {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// order is tasks in the order the runs created them, then any other.
func order(a, b []BrokerRun, tasks map[string]bool) []string {
	var out []string
	for _, id := range taskIDs(append(ledgers(sidesOf(a)), ledgers(sidesOf(b))...)...) {
		if tasks[id] {
			out = append(out, id)
			delete(tasks, id)
		}
	}
	return append(out, slices.Sorted(maps.Keys(tasks))...)
}

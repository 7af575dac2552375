package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/queuelab/qlab/compare"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/run"
)

const compareHelp = `Usage: qlab compare N [flags]

Runs lesson N on both backends (in memory and RabbitMQ) with the same tasks
and failure plan and prints measured answers to seed Q10's comparison:
per-task fates side by side, retry delays configured vs observed,
persistence under a real interruption, throughput with 1 vs 4 consumers,
queue depths over time, and what had to exist first. Each measured row
runs --repeat times per backend and shows the median [min–max]; rows
marked ~ spread widely (timing-sensitive). Needs a broker.

With --broker URL twice, runs lesson N on those two brokers instead (any
lesson that runs on a broker; Q21's cluster excepted) and lists where they
differ: fates, attempts, the x-death, x-delivery-count and x-acquired-count
each delivery carried, retries held back past their delay, and a run one
broker refused. The columns name each broker's version: RabbitMQ 3.10.8
against 4.3, say. The two URLs are used as given; RABBITMQ_URL is not read.`

// maxRepeat bounds --repeat: every repetition is a full set of runs.
const maxRepeat = 20

func cmdCompare(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("compare", compareHelp)
	var pf planFlags
	pf.register(fs, compare.DefaultSpeed, "lesson time per real time for every run. Without it, a lesson whose waits are minutes goes at its own ("+
		ownSpeeds(compare.SpeedOf, compare.DefaultSpeed)+")")
	asJSON := fs.Bool("json", false, "print one JSON document instead of text tables")
	markdown := fs.Bool("markdown", false, "print Markdown tables to paste into slides")
	repeat := fs.Int("repeat", compare.DefaultRepeat, "runs per backend for each measured row; tables show the median [min–max]")
	fs.Bool("no-color", false, "plain text (compare prints no colour; accepted like run's --no-color)")
	verbose := verboseFlag(fs)
	var brokers brokerURLs
	fs.Var(&brokers, "broker", "an AMQP `URL`; give it twice to compare the lesson on two brokers")
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := pf.check(); err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usagef("compare takes one lesson number, e.g. qlab compare 10")
	case *repeat < 1 || *repeat > maxRepeat:
		return usagef("--repeat must be between 1 and %d, got %d", maxRepeat, *repeat)
	case *asJSON && *markdown:
		return usagef("--json and --markdown are two different outputs: pick one")
	}
	l, err := lessons.Parse(pos[0])
	if err != nil {
		return usageError{err}
	}
	if explicitFlag(fs, "broker") {
		if !explicitFlag(fs, "speed") {
			pf.speed = compare.SpeedOf(l)
		}
		return compareBrokers(ctx, stdout, l, brokers, compareOutput{json: *asJSON, markdown: *markdown},
			compare.BrokerConfig{Speed: pf.speed, Plan: pf.plan(), Repeat: *repeat}, *verbose)
	}
	if !l.Dual() {
		return usagef("lesson %d runs on %s only, so there is nothing to compare (lessons on both: %s)", l.Number(), backendList(l), dualLessons())
	}
	// The run API checks the lesson's broker side and finds the broker;
	// compare then runs it many times, each run under names of its own.
	ready, err := run.Prepare(ctx, run.Request{Lesson: l, Options: lesson.Options{Backend: lab.Rabbit}, Discover: discoverOptions})
	if err != nil {
		return withDetails(fmt.Errorf("compare needs a RabbitMQ broker: %w", err), *verbose)
	}
	if !explicitFlag(fs, "speed") {
		pf.speed = compare.SpeedOf(l)
	}
	broker := ready.Broker
	rep, err := compare.Run(ctx, l, compare.Config{Speed: pf.speed, Plan: pf.plan(), Broker: broker.URL, BrokerInfo: broker.String(), Repeat: *repeat})
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		for i, t := range rep.Tables {
			rep.Tables[i] = compare.Unwrapped(t)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case *markdown:
		fmt.Fprintf(stdout, "## %s · %s\n\nIn memory vs RabbitMQ · speed %g× · %s\n\n", l.ID, l.Title, pf.speed, runsEach(rep.Repeat))
		for _, t := range rep.Tables {
			compare.Unwrapped(t).Markdown(stdout)
		}
	default:
		fmt.Fprintf(stdout, "%s · %s\nin memory vs RabbitMQ · speed %g× · %s\n", l.ID, l.Title, pf.speed, runsEach(rep.Repeat))
		layout := render.LayoutFor(terminalWidth(stdout))
		for _, t := range rep.Tables {
			fmt.Fprintln(stdout)
			writeCompared(stdout, t, layout)
		}
	}
	return nil
}

// runsEach says how many runs each measured row had: "3 runs each".
func runsEach(n int) string {
	if n == 1 {
		return "1 run each"
	}
	return fmt.Sprintf("%d runs each", n)
}

// dualLessons lists the numbers of the lessons that run on both backends,
// from the registry: "10, 12, 13".
func dualLessons() string {
	var ns []string
	for _, l := range lessons.All {
		if l.Dual() {
			ns = append(ns, strconv.Itoa(l.Number()))
		}
	}
	return strings.Join(ns, ", ")
}

// writeCompared prints one of compare's tables fitted to layout. Its
// notes come pre-wrapped (compare.Unwrapped joins them again), so that
// the page wraps each whole note to the screen rather than each piece.
func writeCompared(w io.Writer, t render.Table, layout render.Layout) {
	compare.Unwrapped(t).Fit(w, layout)
}

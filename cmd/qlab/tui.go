package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/run"
	"github.com/queuelab/qlab/tui"
)

const tuiHelp = `Usage: qlab tui [N] [flags]

Opens the terminal UI: a lesson menu, or lesson N at once. Queues are boxes,
tasks are tokens travelling between them; space pauses, +/- set the speed
of the next run, r restarts, n/p change lesson, b switches backend, i shows
the whole notice, t the results once the run ended, m a small panel of the
run's metrics (--metrics serves them too), q quits. On a RabbitMQ run, x
cuts the run's own connections and c closes the channel of a worker that
holds a delivery: the log shows the redelivery and the reconnect. A lesson
may have keys of its own, listed in its help line: in lesson 21, k stops
the leader's node and v revives it. On the menu, / filters.`

// brokerDiscovery finds a RabbitMQ broker for the TUI's backend switch
// (run.FindBroker). It only looks (RABBITMQ_URL, then the default URL)
// and never starts a container from inside the UI; a miss is shown in the
// view, with RABBITMQ_URL's own failure when it is set.
func brokerDiscovery(ctx context.Context) (string, error) {
	b, err := run.FindBroker(ctx, discoverOptions)
	return b.URL, err
}

func cmdTui(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tui", tuiHelp)
	backend := fs.String("backend", "", "backend to run on: inmem or rabbit (default: each lesson's own)")
	var pf planFlags
	pf.register(fs, 0, "lesson time per real time, whatever the lesson (default: each lesson's own, 0.25× to follow the tokens, more for the long lessons: "+ownSpeeds(watchSpeed, 1)+")")
	noColor := fs.Bool("no-color", false, "plain text, no ANSI colour (NO_COLOR does the same)")
	var mf metricsFlags
	mf.register(fs, false)
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("tui takes at most one lesson number, e.g. qlab tui 7")
	}
	speedGiven := given(fs, "speed")
	if !speedGiven {
		pf.speed = 1 // a stand-in so check validates the other flags; the TUI picks each lesson's speed
	}
	if err := pf.check(); err != nil {
		return err
	}
	if err := mf.check(); err != nil {
		return err
	}
	cfg := tui.Config{Broker: brokerDiscovery}
	if speedGiven {
		cfg.Speed = pf.speed
	}
	if given(fs, "backend") { // a backend the user names is honoured, never replaced
		if err := checkBackend(*backend); err != nil {
			return err
		}
		cfg.Backend = lab.Backend(*backend)
	}
	if len(pos) == 1 {
		l, err := lessons.Parse(pos[0])
		if err != nil {
			return usageError{err}
		}
		if cfg.Backend != "" && l.Runner(cfg.Backend) == nil {
			return usageError{lesson.ErrNoBackend{Lesson: l, Backend: cfg.Backend}}
		}
		cfg.Start = l.Number()
	}
	met, err := mf.serve(stderr, "until you quit the TUI")
	if err != nil {
		return err
	}
	defer met.stop()
	if !isTerminal(stdout) || !isTerminal(os.Stdin) {
		return errNotATerminal
	}
	cfg.Metrics, cfg.MetricsURL = met.m, met.url
	cfg.Plan = pf.plan()
	cfg.Color = !*noColor && colorWanted(stdout)
	return tui.Run(ctx, cfg)
}

// given reports whether flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// errNotATerminal is what `qlab tui` says when its output is piped.
var errNotATerminal = errors.New("tui needs a terminal; for a transcript use qlab run N (or --json)")

// isTerminal reports whether f is an interactive terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

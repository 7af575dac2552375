package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

const runHelp = `Usage: qlab run N [flags]

Runs lesson N and prints what to notice, the run as log lines stamped with
lesson time (mm:ss.mmm), and a "what happened" table per task. With --json
it prints only the event stream, one JSON object per line; with --mermaid, a
Mermaid sequence diagram of the run to paste into docs.`

// runFlags are the flags of `qlab run`.
type runFlags struct {
	planFlags
	backend string
	json    bool
	mermaid bool
	noColor bool
	names   string
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", "inmem", "where the lesson runs: inmem or rabbit")
	f.planFlags.register(fs, 1, "lesson time per real time: 10 runs ten times faster; stamps stay in lesson time")
	fs.BoolVar(&f.json, "json", false, "print the event stream as JSON lines instead of the log")
	fs.BoolVar(&f.mermaid, "mermaid", false, "print a Mermaid sequence diagram of the run instead of the log")
	fs.BoolVar(&f.noColor, "no-color", false, "plain text, no ANSI colour (NO_COLOR does the same)")
	fs.StringVar(&f.names, "names", "run", "rabbit queue names: run (a private per-run prefix) or seed (the seed's exact names, for the management UI)")
}

// check validates the flags' values.
func (f *runFlags) check() error {
	if err := f.planFlags.check(); err != nil {
		return err
	}
	if f.names != "run" && f.names != "seed" {
		return usagef("--names must be run or seed, got %q", f.names)
	}
	return checkBackend(f.backend)
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f runFlags
	fs := newFlagSet("run", runHelp)
	f.register(fs)
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("run takes one lesson number, e.g. qlab run 7 (see qlab list)")
	}
	if err := f.check(); err != nil {
		return err
	}
	l, err := lessons.Parse(pos[0])
	if err != nil {
		return usageError{err}
	}
	backend, err := pickBackend(fs, l, f.backend)
	if err != nil {
		return err
	}
	opts := lessons.Options{Backend: backend, Speed: f.speed, Plan: f.plan(), SeedNames: f.names == "seed"}
	if backend == lab.Rabbit {
		b, err := rabbit.Discover(ctx, discoverOptions)
		if err != nil {
			return err
		}
		opts.Broker = b.URL
	}

	if f.json && f.mermaid {
		return usagef("--json and --mermaid are two different outputs: pick one")
	}
	if f.json {
		_, err := lessons.Run(ctx, l, opts, render.NewJSONSink(stdout))
		return err
	}
	if f.mermaid {
		var rec lab.Recorder
		_, err := lessons.Run(ctx, l, opts, &rec)
		render.Mermaid(stdout, rec.Events)
		return err
	}
	style := render.Style{Color: !f.noColor && colorWanted(stdout)}
	fmt.Fprintf(stdout, "%s · %s  (%s, speed %g×)\n", l.ID, l.Title, backend, f.speed)
	fmt.Fprintf(stdout, "What to notice: %s\n\n", l.Notice)
	var rec lab.Recorder
	res, runErr := lessons.Run(ctx, l, opts, render.LogSink{W: stdout, Style: style}, &rec)
	if len(res.Tasks) > 0 { // a run that could not start (no broker, a stale queue) created none
		fmt.Fprintln(stdout)
		render.WhatHappened(rec.Events).Write(stdout)
	}
	for _, t := range res.Tables {
		fmt.Fprintln(stdout)
		t.Write(stdout)
	}
	if errors.Is(runErr, context.Canceled) {
		return errors.New("interrupted: the table above says what became of each task in flight")
	}
	return runErr
}

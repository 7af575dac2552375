package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

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
	backend  string
	speed    float64
	json     bool
	mermaid  bool
	seed     int64
	failRate float64
	noColor  bool
	names    string
}

func (f *runFlags) register(fs interface {
	StringVar(*string, string, string, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
	Int64Var(*int64, string, int64, string)
}) {
	fs.StringVar(&f.backend, "backend", "inmem", "where the lesson runs: inmem or rabbit")
	fs.Float64Var(&f.speed, "speed", 1, "lesson time per real time: 10 runs ten times faster; stamps stay in lesson time")
	fs.BoolVar(&f.json, "json", false, "print the event stream as JSON lines instead of the log")
	fs.BoolVar(&f.mermaid, "mermaid", false, "print a Mermaid sequence diagram of the run instead of the log")
	fs.Int64Var(&f.seed, "seed", 1, "seed for random transient failures (with --fail-rate)")
	fs.Float64Var(&f.failRate, "fail-rate", 0, "chance 0..1 that a healthy task's attempt fails transiently")
	fs.BoolVar(&f.noColor, "no-color", false, "plain text, no ANSI colour (NO_COLOR does the same)")
	fs.StringVar(&f.names, "names", "run", "rabbit queue names: run (a private per-run prefix) or seed (the seed's exact names, for the management UI)")
}

// check validates the flags' values.
func (f *runFlags) check() error {
	if !(f.speed > 0) || math.IsInf(f.speed, 0) {
		return usagef("--speed must be a positive number, got %v", f.speed)
	}
	if f.failRate < 0 || f.failRate > 1 || math.IsNaN(f.failRate) {
		return usagef("--fail-rate must be between 0 and 1, got %v", f.failRate)
	}
	if f.names != "run" && f.names != "seed" {
		return usagef("--names must be run or seed, got %q", f.names)
	}
	switch lab.Backend(f.backend) {
	case lab.InMem, lab.Rabbit:
	default:
		return usagef("--backend must be inmem or rabbit, got %q", f.backend)
	}
	return nil
}

func (f *runFlags) plan() *lab.Plan {
	p := lab.DefaultPlan()
	p.Seed, p.FailRate = f.seed, f.failRate
	return &p
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

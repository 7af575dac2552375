package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
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
	prefix  string
	verbose *bool
	scale   scaleFlags
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", "inmem", "where the lesson runs: inmem or rabbit")
	f.planFlags.register(fs, 1, "lesson time per real time: 10 runs ten times faster; stamps stay in lesson time")
	fs.BoolVar(&f.json, "json", false, "print the event stream as JSON lines instead of the log")
	fs.BoolVar(&f.mermaid, "mermaid", false, "print a Mermaid sequence diagram of the run instead of the log")
	fs.BoolVar(&f.noColor, "no-color", false, "plain text, no ANSI colour (NO_COLOR does the same)")
	fs.StringVar(&f.names, "names", "run", "rabbit queue names: run (a private per-run prefix) or exact (the seed document's exact names, for the management UI; the old spelling seed still works)")
	fs.StringVar(&f.prefix, "prefix", "", "with --names exact: put the seed's names under your own prefix (alice → alice.sequential.queue), so several people can run the demo on one broker")
	f.verbose = verboseFlag(fs)
	f.scale.register(fs)
}

// check validates the flags' values.
func (f *runFlags) check() error {
	if err := f.planFlags.check(); err != nil {
		return err
	}
	if f.names == "seed" { // the old spelling, which read too much like --seed
		f.names = "exact"
	}
	if f.names != "run" && f.names != "exact" {
		return usagef("--names must be run or exact, got %q", f.names)
	}
	if f.prefix != "" {
		if f.names != "exact" {
			return usagef("--prefix goes with --names exact (run names have a private prefix already)")
		}
		if err := rabbit.CheckPrefix(f.prefix); err != nil {
			return usagef("--prefix: %v", err)
		}
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
	if f.json && f.mermaid {
		return usagef("--json and --mermaid are two different outputs: pick one")
	}
	l, err := lessons.Parse(pos[0])
	if err != nil {
		return usageError{err}
	}
	backend, err := pickBackend(fs, l, f.backend)
	if err != nil {
		return err
	}
	plan, err := f.scale.apply(fs, l, f.plan())
	if err != nil {
		return err
	}
	if !given(fs, "speed") && l.Speed > 0 {
		f.speed = l.Speed // a lesson that spans lesson hours runs at its own pace
	}
	opts := lessons.Options{Backend: backend, Speed: f.speed, Plan: plan, SeedNames: f.names == "exact", Prefix: f.prefix}
	if backend == lab.Rabbit {
		b, err := rabbit.Discover(ctx, discoverOptions)
		if err != nil {
			return withDetails(err, *f.verbose)
		}
		opts.Broker = b.URL
		opts.Names = rabbitenv.Of(*runNames(f))
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	out := &watchedOutput{w: stdout, stop: stop}
	if note := prefixNote(opts.Names); note != "" {
		// A killed run's user needs it: on stdout with the log, on stderr
		// where stdout is a JSON stream or a diagram.
		noteTo := io.Writer(out)
		if f.json || f.mermaid {
			noteTo = stderr
		}
		fmt.Fprintln(noteTo, note)
	}
	runErr := runLesson(ctx, l, opts, f, out, colorWanted(stdout))
	if err := out.Err(); err != nil {
		return fmt.Errorf("%w (%v): the run stopped and deleted the queues it created", errOutputClosed, err)
	}
	if errors.Is(runErr, context.Canceled) {
		return errors.New("interrupted: the table above says what became of each task in flight")
	}
	var exists *rabbit.ExistsError
	if errors.As(runErr, &exists) && f.names == "exact" && f.prefix == "" {
		return fmt.Errorf("%w; or run under a prefix of your own: --names exact --prefix yourname", runErr)
	}
	return runErr
}

// runNames are the broker names a run declares under: a fresh private
// prefix, or the seed's under --prefix (the checked flags), or the seed's
// own.
func runNames(f runFlags) *rabbit.Names {
	names := rabbit.RunNames()
	if f.names == "exact" {
		names, _ = rabbit.PersonNames(f.prefix) // checked by runFlags.check
		if f.prefix == "" {
			names = rabbit.SeedNames()
		}
	}
	return &names
}

// prefixNote names the prefix a broker run declares under and the command
// that removes what it leaves if it is killed; "" for the seed's own names
// or no broker.
func prefixNote(names *lesson.Names) string {
	if names == nil || names.Prefix == "" {
		return ""
	}
	p := strings.TrimSuffix(names.Prefix, ".")
	return fmt.Sprintf("This run's queues are under the prefix %s; if it is killed, remove them with: qlab broker clean --prefix %s", p, p)
}

// runLesson runs l with opts and writes it to out as f asks: JSON lines, a
// Mermaid diagram, or the notice, log and tables.
func runLesson(ctx context.Context, l lessons.Lesson, opts lessons.Options, f runFlags, out io.Writer, color bool) error {
	if f.json {
		_, err := lessons.Run(ctx, l, opts, render.NewJSONSink(out))
		return err
	}
	if f.mermaid {
		var rec lab.Recorder
		_, err := lessons.Run(ctx, l, opts, &rec)
		render.Mermaid(out, rec.Events)
		return err
	}
	style := render.Style{Color: !f.noColor && color}
	fmt.Fprintf(out, "%s · %s  (%s, speed %g×)\n", l.ID, l.Title, opts.Backend, f.speed)
	fmt.Fprintf(out, "What to notice: %s\n\n", l.NoticeFor(opts.Backend))
	var rec lab.Recorder
	res, runErr := lessons.Run(ctx, l, opts, render.LogSink{W: out, Style: style}, &rec)
	if len(res.Tasks) > 0 { // a run that could not start (no broker, a stale queue) created none
		fmt.Fprintln(out)
		render.WhatHappened(rec.Events).Write(out)
	}
	for _, t := range res.Tables {
		fmt.Fprintln(out)
		t.Write(out)
	}
	if res.Missed > 0 {
		fmt.Fprintf(out, "\nA reader of this run fell behind and missed %d events; the log above has them all.\n", res.Missed)
	}
	if runErr == nil {
		fmt.Fprintln(out)
		fmt.Fprint(out, nextSteps(l, opts.Backend))
	}
	return runErr
}

// nextSteps is what a finished run points to: the other backend and
// compare for a lesson that has both, and the next lesson.
func nextSteps(l lessons.Lesson, ran lab.Backend) string {
	var b strings.Builder
	if l.Dual() {
		other := lab.InMem
		if ran == lab.InMem {
			other = lab.Rabbit
		}
		fmt.Fprintf(&b, "Try:  qlab run %d --backend %s   (the same flow, the other mechanism), or qlab compare %d\n", l.Number(), other, l.Number())
	}
	if next, ok := lessons.Next(l); ok {
		fmt.Fprintf(&b, "Next: qlab run %d   (%s)\n", next.Number(), next.Title)
	} else {
		b.WriteString("Next: you have run every lesson; qlab tui replays any of them, qlab compare N measures the two backends\n")
	}
	return b.String()
}

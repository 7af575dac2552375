package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/run"
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
	keep    bool
	names   string
	prefix  string
	verbose *bool
	scale   scaleFlags
	metrics metricsFlags
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", "", "where the lesson runs: inmem or rabbit (default: the lesson's own, rabbit for lessons "+defaultingTo(lab.Rabbit)+", inmem for the others)")
	f.planFlags.register(fs, 1, "lesson time per real time, whatever the lesson: 10 runs ten times faster than real time; stamps stay in lesson time. Without it, a long lesson goes at its own pace ("+ownSpeeds(watchSpeed, 1)+"); a --speed below that pace makes it slower, and the run says how long it will take")
	fs.BoolVar(&f.json, "json", false, "print the event stream as JSON lines instead of the log")
	fs.BoolVar(&f.mermaid, "mermaid", false, "print a Mermaid sequence diagram of the run instead of the log")
	fs.BoolVar(&f.noColor, "no-color", false, "plain text, no ANSI colour (NO_COLOR does the same)")
	fs.BoolVar(&f.keep, "keep", false, "on the broker: leave the run's queues and the messages in them when it ends, to practise qlab dlq inspect/replay on; qlab broker clean --prefix P removes them")
	fs.StringVar(&f.names, "names", "run", "rabbit queue names: run (a private per-run prefix) or exact (the seed document's exact names, for the management UI; the old spelling seed still works)")
	fs.StringVar(&f.prefix, "prefix", "", "with --names exact: put the seed's names under your own prefix (alice → alice.sequential.queue), so several people can run the demo on one broker")
	f.verbose = verboseFlag(fs)
	f.scale.register(fs)
	f.metrics.register(fs, true)
}

// check validates the flags' values; the naming and prefix are the run
// API's to check (run.Check).
func (f *runFlags) check() error {
	if err := f.planFlags.check(); err != nil {
		return err
	}
	if err := f.metrics.check(); err != nil {
		return err
	}
	if _, err := run.CheckNaming(run.Naming(f.names), f.prefix); err != nil {
		return usageError{err}
	}
	if f.keep && f.names == "exact" && f.prefix == "" {
		return usagef("--keep leaves queues for qlab broker clean --prefix to remove: keep the run's own prefix (no --names exact) or add --prefix yourname")
	}
	if f.backend == "" {
		return nil // the lesson's own
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
	f.speed = runSpeed(fs, l, f.speed)
	if f.keep && backend != lab.Rabbit {
		return usagef("--keep keeps a broker run's queues; lesson %d runs on %s here (add --backend rabbit)", l.Number(), backend)
	}
	plan, err := f.scale.apply(fs, l, f.plan())
	if err != nil {
		return err
	}
	if f.scale.tasks > 0 {
		defer limitMemory()()
	}
	met, err := f.metrics.serve(stderr, f.metrics.until())
	if err != nil {
		return err
	}
	defer met.stop()
	ready, err := run.Prepare(ctx, run.Request{
		Lesson:   l,
		Options:  lesson.Options{Backend: backend, Speed: f.speed, Plan: plan, Keep: f.keep, Logger: logger(stderr)},
		Naming:   run.Naming(f.names),
		Prefix:   f.prefix,
		Discover: discoverOptions,
	})
	switch {
	case errors.Is(err, run.ErrInvalid), errors.Is(err, run.ErrNoCluster), errors.Is(err, lesson.ErrBrokerTooOld):
		return usageError{err}
	case err != nil:
		if !explicitFlag(fs, "backend") { // the lesson's default: say it runs in memory too
			err = noBrokerHint(err, l, invoked())
		}
		return withDetails(err, *f.verbose)
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	out := &watchedOutput{w: stdout, stop: stop}
	// Notes on the run's queues: on stdout with the log, on stderr where
	// stdout is a JSON stream or a diagram.
	noteTo := io.Writer(out)
	if f.json || f.mermaid {
		noteTo = stderr
	}
	for _, note := range []string{slowerNote(l, f.speed), ready.PrefixNote()} { // a killed run's user needs the prefix
		if note == "" {
			continue
		}
		if noteTo == io.Writer(out) { // beside the log, it wraps as the log does
			note = strings.Join(render.Wrap(note, render.DefaultWidth, "  "), "\n")
		}
		fmt.Fprintln(noteTo, note)
	}
	var extra []lab.Sink
	if met.m != nil {
		extra = append(extra, met.m)
	}
	runErr := runLesson(ctx, ready, f, out, colorWanted(stdout), terminalWidth(stdout), extra...)
	reportLesson(ctx, l, runErr, stderr)
	if err := out.Err(); err != nil {
		return fmt.Errorf("%w (%v): the run stopped and deleted the queues it created", errOutputClosed, err)
	}
	if f.keep && ready.Options.Names != nil {
		fmt.Fprintln(noteTo, "\n"+keptNote(ready.Options.Names, invoked()))
	}
	if f.metrics.hold && runErr == nil {
		fmt.Fprintln(stderr, "metrics: the run ended; still serving its final counts until Ctrl-C")
		<-ctx.Done()
		return nil
	}
	if errors.Is(runErr, context.Canceled) {
		return errors.New("interrupted: the table above says what became of each task in flight")
	}
	var exists *rabbit.ExistsError
	if errors.As(runErr, &exists) && run.Naming(f.names) != run.PerRun && f.prefix == "" {
		return fmt.Errorf("%w; or run under a prefix of your own: --names exact --prefix yourname", runErr)
	}
	return runErr
}

// runLesson runs the prepared lesson and writes it to out as f asks: JSON
// lines, a Mermaid diagram, or the notice, log and tables.
//
// extra sinks (the metrics) see every event too.
func runLesson(ctx context.Context, ready run.Ready, f runFlags, out io.Writer, color bool, width int, extra ...lab.Sink) error {
	l, opts := ready.Lesson, ready.Options
	if f.json {
		_, err := ready.Start(ctx, append(extra, render.NewJSONSink(out))...)
		return err
	}
	if f.mermaid {
		var rec lab.Recorder
		_, err := ready.Start(ctx, append(extra, &rec)...)
		render.Mermaid(out, rec.Events)
		return err
	}
	page := render.Page{W: out, Color: !f.noColor && color, Layout: render.LayoutFor(width)}
	page.Prose(fmt.Sprintf("%s · %s  (%s, speed %g×)", l.ID, l.Title, opts.Backend, f.speed), "  ")
	page.Prose("What to notice: "+l.NoticeFor(opts.Backend), "")
	fmt.Fprintln(out)
	var outcomes render.Outcomes // not every event: a --tasks 100000 run stays small
	res, runErr := ready.Start(ctx, append(extra, page, &outcomes)...)
	if len(res.Tasks) > 0 { // a run that could not start (no broker, a stale queue) created none
		page.Closing(outcomes.Table(), nil)
	}
	page.Tables(res.Tables)
	if runErr == nil {
		fmt.Fprintln(out)
		page.Prose(nextSteps(l, opts.Backend, invoked()), "      ")
	}
	return runErr
}

// logger is where a run's backend reports trouble outside the event
// stream (a lost connection, a reconnect, a clean-up that left
// something): stderr, so a --json stdout stays a clean stream, in
// wrapped lines a student reads (proseLogger).
func logger(stderr io.Writer) *slog.Logger {
	return proseLogger(stderr, slog.LevelInfo)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/charmbracelet/x/term"

	"github.com/queuelab/qlab/exercises"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// errOutputClosed is the cause a run is cancelled with when its output
// went away.
var errOutputClosed = errors.New("output closed")

// watchedOutput passes writes to w; the first write that fails (a closed
// pipe: `qlab run 10 --json | head -1`) stops the run through stop, so it
// ends and deletes what it created instead of writing into nothing. main
// ignores SIGPIPE, which would otherwise kill the process at that write.
type watchedOutput struct {
	w    io.Writer
	stop context.CancelCauseFunc

	mu  sync.Mutex
	err error
}

func (o *watchedOutput) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		o.mu.Lock()
		if o.err == nil {
			o.err = err
			o.stop(errOutputClosed)
		}
		o.mu.Unlock()
	}
	return n, err
}

// Err is the first write error, or nil.
func (o *watchedOutput) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// terminalWidth is w's width in columns when w is a terminal, else 0.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(f.Fd())
	if err != nil {
		return 0
	}
	return width
}

// invocation is how the user started qlab, so that a hint names a command
// that works as typed: make (the Makefile sets QLAB_VIA=make), go run, or
// the binary's own name (qlab from PATH, bin/qlab).
type invocation struct {
	make bool
	prog string
}

// invoked reads how this process was started.
func invoked() invocation {
	if os.Getenv("QLAB_VIA") == "make" {
		return invocation{make: true}
	}
	prog := os.Args[0]
	switch {
	case strings.Contains(prog, "go-build"): // go run (and go test) build under a go-build temp dir
		return invocation{prog: "go run ./cmd/qlab"}
	case !strings.ContainsRune(prog, filepath.Separator):
		return invocation{prog: "qlab"}
	}
	return invocation{prog: prog}
}

// run is the command that runs lesson n with flags (may be "").
func (i invocation) run(n int, flags string) string {
	if i.make {
		if flags != "" {
			return fmt.Sprintf("make lesson-%d FLAGS=%q", n, flags)
		}
		return fmt.Sprintf("make lesson-%d", n)
	}
	return strings.TrimSpace(fmt.Sprintf("%s run %d %s", i.prog, n, flags))
}

// compare is the command that compares lesson n's backends.
func (i invocation) compare(n int) string {
	if i.make {
		return fmt.Sprintf("make compare-%d", n)
	}
	return fmt.Sprintf("%s compare %d", i.prog, n)
}

// anyLesson is how to open lesson N in the TUI and how to compare it, N
// left for the reader to fill in.
func (i invocation) anyLesson() (tui, compare string) {
	if i.make {
		return "make tui N=N", "make compare-N"
	}
	return i.prog + " tui N", i.prog + " compare N"
}

// nextSteps is what a finished run points to, as commands that work the
// way qlab was started: the other backend and compare for a lesson that
// has both, and the next lesson.
func nextSteps(l lesson.Lesson, ran lab.Backend, how invocation) string {
	var b []string
	if l.Dual() {
		other := lab.InMem
		if ran == lab.InMem {
			other = lab.Rabbit
		}
		b = append(b, fmt.Sprintf("Try:  %s   (the same flow, the other mechanism), or %s",
			how.run(l.Number(), "--backend "+string(other)), how.compare(l.Number())))
	}
	b = append(b, readNext(l, how))
	if next, ok := lessons.Next(l); ok {
		b = append(b, fmt.Sprintf("Next: %s   (%s)", how.run(next.Number(), ""), next.Title))
	} else {
		tui, compare := how.anyLesson()
		b = append(b, fmt.Sprintf("Next: you have run every lesson; %s replays lesson N, %s measures its two backends", tui, compare))
	}
	return strings.Join(b, "\n")
}

// readNext points from a run to its lesson's page and then its exercise:
// the path run, read, write. Each step has a line of its own: as one line
// they wrapped at 80 columns between "ex" and its number.
func readNext(l lesson.Lesson, how invocation) string {
	line := "Read: " + lessons.PagePath(l) + "   (the question, what was measured)"
	for _, e := range exercises.All {
		if e.Lesson == l.ID {
			prog := how.prog
			if how.make {
				prog = "bin/qlab"
			}
			return line + fmt.Sprintf("\nWrite: %s ex %d   (the mechanism yourself, checked as you save)", prog, e.Number())
		}
	}
	return line
}

// noBrokerHint adds to a failed broker discovery, for a lesson that runs
// on the broker by default and in memory too, the command that runs it
// there.
func noBrokerHint(err error, l lesson.Lesson, how invocation) error {
	var nb *rabbit.NoBrokerError
	if l.InMem == nil || !errors.As(err, &nb) {
		return err
	}
	return fmt.Errorf("%w\nor run it in memory, no broker needed: %s", err, how.run(l.Number(), "--backend inmem"))
}

// keptNote says where a --keep run left its queues and how to practise on
// them and remove them, in lines that fit DefaultWidth.
func keptNote(names *lesson.Names, how invocation) string {
	p := strings.TrimSuffix(names.Prefix, ".")
	prog := how.prog
	if how.make {
		prog = "bin/qlab"
	}
	head := "Kept: this run's queues and their messages stay on the broker under the prefix " + p +
		". Read a queue (taking nothing), replay one into another, remove them all:"
	return strings.Join(render.Wrap(head, render.DefaultWidth, ""), "\n") + "\n" +
		"  " + prog + " dlq inspect QUEUE --prefix " + p + "\n" +
		"  " + prog + " dlq replay QUEUE --to QUEUE --prefix " + p + "\n" +
		"  " + prog + " broker clean --prefix " + p
}

// proseLogger is a logger for what a person reads on w: each record at
// level or above is one line "qlab: [warning: ]message key=value …",
// wrapped as the log is (to the terminal, 80 columns where w is none).
// It prints no wall-clock stamp: beside a lesson's own stamps one would
// read as lesson time.
func proseLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(&proseHandler{w: w, width: render.LayoutFor(terminalWidth(w)).Prose, level: level, mu: &sync.Mutex{}})
}

// proseHandler is proseLogger's slog.Handler.
type proseHandler struct {
	w      io.Writer
	width  int
	level  slog.Level
	mu     *sync.Mutex // shared by the handlers WithAttrs derives: one writer
	attrs  []slog.Attr
	prefix string // the groups opened, "g." each
}

// Enabled reports whether a record at l is printed.
func (h *proseHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

// Handle prints r as one wrapped line.
func (h *proseHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("qlab: ")
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		if v := a.Value.Resolve().String(); a.Key != "" {
			if strings.ContainsAny(v, " =\"") {
				v = strconv.Quote(v)
			}
			b.WriteString(" " + a.Key + "=" + v)
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { a.Key = h.prefix + a.Key; return add(a) })
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintln(h.w, strings.Join(render.Wrap(b.String(), h.width, "      "), "\n"))
	return err
}

// WithAttrs returns a handler that prints attrs with every record.
func (h *proseHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = slices.Clip(h.attrs)
	for _, a := range attrs {
		a.Key = h.prefix + a.Key
		c.attrs = append(c.attrs, a)
	}
	return &c
}

// WithGroup returns a handler whose later keys are qualified by name.
func (h *proseHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.prefix += name + "."
	return &c
}

// printWrapped prints a line of what qlab reports (dlq, broker clean)
// wrapped as prose is on w (its terminal's width, 80 columns where w is
// none), its later lines after indent.
func printWrapped(w io.Writer, indent, format string, args ...any) {
	for _, line := range render.Wrap(fmt.Sprintf(format, args...), render.LayoutFor(terminalWidth(w)).Prose, indent) {
		fmt.Fprintln(w, line)
	}
}

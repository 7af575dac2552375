package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/queuelab/qlab/exercises"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// Exit codes: 0 ok, 1 the run failed, 2 the command line was wrong.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks an error as the user's command line being wrong.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

const mainHelp = `qlab — QueueLab, a hands-on lab for how message queues fail and recover.

Usage:
  qlab list                 the lessons: number, title, backends
  qlab run N [flags]        run lesson N (qlab run --help for flags)
  qlab broker status|up|down|latency|clean
                            find the broker, start one (Docker), measure TTL
                            delays, remove what a killed or --keep run left
                            (qlab broker --help)
  qlab broker cluster up|down|status|kill NODE|revive NODE
                            a three-node RabbitMQ cluster for quorum queues
  qlab compare N [flags]    run lesson N on both backends and measure the
                            difference
  qlab tui [N] [flags]      watch lessons animate in the terminal
                            (qlab tui --help)
  qlab ex [N | command]     exercises: write the mechanism, qlab checks it
                            (qlab ex --help)
  qlab dlq inspect|replay|purge QUEUE [flags]
                            read, replay or empty a dead-letter queue
                            (qlab dlq --help)
  qlab serve [flags]        the seeds' HTTP APIs on 127.0.0.1: curl a user or
                            a scheduled mail onto the broker and watch it
                            arrive (qlab serve --help)
  qlab class serve|join|status|leave
                            the instructor's room: a class's progress, live
                            (qlab class --help)
  qlab version              which qlab this is: its commit and Go version
  qlab help                 this text

Start with: qlab run 1`

// command is one subcommand.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

var commands = map[string]command{
	"list":    cmdList,
	"run":     cmdRun,
	"broker":  cmdBroker,
	"compare": cmdCompare,
	"tui":     cmdTui,
	"ex":      cmdEx,
	"dlq":     cmdDLQ,
	"serve":   cmdServe,
	"class":   cmdClass,
	"version": cmdVersion,
}

// Main runs qlab with args (without the program name) and returns the exit
// code. Errors are printed to stderr as one line, prefixed "qlab: ".
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, mainHelp)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, mainHelp)
		return exitOK
	case "--version":
		name = "version"
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "qlab: unknown command %q\n\n%s\n", name, mainHelp)
		return exitUsage
	}
	err := cmd(ctx, rest, stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, new(usageError)), errors.As(err, new(*rabbit.SpeedError)):
		fmt.Fprintln(stderr, "qlab: "+err.Error())
		return exitUsage
	default:
		fmt.Fprintln(stderr, "qlab: "+err.Error())
		var d detailed
		if errors.As(err, &d) {
			fmt.Fprint(stderr, d.details)
		}
		return exitError
	}
}

// detailed is an error with more to say under -v, printed after its line.
type detailed struct {
	error
	details string
}

func (d detailed) Unwrap() error { return d.error }

// verboseFlag registers -v and --verbose on fs.
func verboseFlag(fs *flag.FlagSet) *bool {
	v := fs.Bool("verbose", false, "on failure, print every step's full error (where qlab looked for a broker)")
	fs.BoolVar(v, "v", false, "short for --verbose")
	return v
}

// withDetails adds the full discovery errors to err when verbose is set.
func withDetails(err error, verbose bool) error {
	var nb *rabbit.NoBrokerError
	if verbose && errors.As(err, &nb) {
		return detailed{err, nb.Details()}
	}
	return err
}

const listHelp = `Usage: qlab list [flags]

Lists the lessons: number, title and the backends each runs on.`

func cmdList(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("list", listHelp)
	backend := fs.String("backend", "", "only lessons that run on this backend: inmem or rabbit")
	numbers := fs.Bool("numbers", false, "print only the lesson numbers, one per line (for scripts)")
	markdown := fs.Bool("markdown", false, "print the README's lesson list: each lesson's page, backends, exercise and question")
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("list takes no arguments, got %q", pos)
	}
	if *backend != "" {
		if err := checkBackend(*backend); err != nil {
			return err
		}
	}
	var shown []lesson.Lesson
	for _, l := range lessons.All {
		if *backend == "" || l.Runner(lab.Backend(*backend)) != nil {
			shown = append(shown, l)
		}
	}
	switch {
	case *numbers:
		for _, l := range shown {
			fmt.Fprintln(stdout, l.Number())
		}
	case *markdown:
		table, err := lessonTable(shown)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, table)
	default:
		width := len("LESSON")
		for _, l := range shown {
			width = max(width, utf8.RuneCountInString(l.Title))
		}
		fmt.Fprintf(stdout, "%-4s %-*s  %s\n", "N", width, "LESSON", "BACKENDS")
		for _, l := range shown {
			pad := width - utf8.RuneCountInString(l.Title)
			fmt.Fprintf(stdout, "%-4d %s%s  %s\n", l.Number(), l.Title, strings.Repeat(" ", pad), backendList(l))
		}
		fmt.Fprintln(stdout, "\nRun one with: qlab run N   (make lesson-N does the same)")
		fmt.Fprintln(stdout, "Then read its page, lessons/qNN/README.md, and do its exercise: qlab ex")
	}
	return nil
}

func backendList(l lesson.Lesson) string {
	var b []string
	for _, be := range l.Backends() {
		b = append(b, string(be))
	}
	return strings.Join(b, ", ")
}

// lessonTable is the README's lesson list, generated from the registry
// and the lessons' pages: an item a lesson, wrapped to 80 columns, with
// its number, its title linked to its page, its backends, its exercises
// (qlab ex N) and the question its page asks. A table row would be over
// 100 columns for most lessons.
func lessonTable(ls []lesson.Lesson) (string, error) {
	exercise := map[string][]string{}
	for _, e := range exercises.All {
		exercise[e.Lesson] = append(exercise[e.Lesson], strconv.Itoa(e.Number()))
	}
	var b strings.Builder
	for _, l := range ls {
		q, err := lessons.Question(l)
		if err != nil {
			return "", err
		}
		about := backendList(l)
		switch ex := exercise[l.ID]; len(ex) {
		case 0:
		case 1:
			about += "; exercise " + ex[0]
		default:
			about += "; exercises " + strings.Join(ex, ", ")
		}
		item := fmt.Sprintf("- **%d** [%s](%s) (%s): %s", l.Number(), l.Title, lessons.PagePath(l), about, q)
		b.WriteString(strings.Join(render.Wrap(item, render.DefaultWidth, "  "), "\n") + "\n")
	}
	return b.String(), nil
}

// newFlagSet returns a flag set that reports errors to the caller instead
// of printing or exiting; parseInterspersed prints usage for -h.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	helpText.Store(fs, usage)
	return fs
}

// helpText holds each flag set's usage text, for -h: a sync.Map, as the
// tests run commands at once in one process.
var helpText sync.Map // *flag.FlagSet → string

// printHelp writes fs's usage text and flags to w, spelled --name as
// users type them.
func printHelp(fs *flag.FlagSet, w io.Writer) {
	usage, _ := helpText.Load(fs)
	fmt.Fprintln(w, usage)
	fmt.Fprintln(w, "\nFlags:")
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s\n", strings.TrimSpace(f.Name+" "+kind))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		for _, line := range render.Wrap(usage, render.DefaultWidth-len(flagIndent), "") {
			fmt.Fprintln(w, flagIndent+line)
		}
	})
}

// flagIndent sets a flag's help under its name.
const flagIndent = "      "

// singleDash matches a flag name as the flag package prints it (-speed),
// to be spelled as users type it (--speed).
var singleDash = regexp.MustCompile(`(^|[\s:])-([a-zA-Z][\w-]*)`)

// parseInterspersed parses flags that may come before or after the
// positional arguments (`qlab run 7 --speed 10` and `qlab run --speed 10 7`).
func parseInterspersed(fs *flag.FlagSet, args []string, help io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(fs, help)
				return nil, err
			}
			return nil, usagef("%s (see qlab %s --help)", singleDash.ReplaceAllString(err.Error(), "$1--$2"), fs.Name())
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// planFlags are the flags every command that runs lessons shares: the
// speed, and the seeded failure plan.
type planFlags struct {
	speed    float64
	seed     int64
	failRate float64
}

// register adds --speed (with the command's own default and help),
// --seed and --fail-rate to fs.
func (p *planFlags) register(fs *flag.FlagSet, speed float64, speedHelp string) {
	fs.Float64Var(&p.speed, "speed", speed, speedHelp)
	fs.Int64Var(&p.seed, "seed", 1, "seed for random transient failures (with --fail-rate)")
	fs.Float64Var(&p.failRate, "fail-rate", 0, "chance 0..1 that a healthy task's attempt fails transiently")
}

// The speeds a run accepts. Faster than maxSpeed, a 100 ms step of lesson
// time is 0.1 ms of real time: scheduling noise, not the lesson. (The
// broker has its own, lower limit per TTL: rabbit.SpeedError.)
const (
	minSpeed = 0.01
	maxSpeed = 1000.0
)

// check validates the values: a speed in [minSpeed, maxSpeed], a rate in
// [0,1].
func (p *planFlags) check() error {
	if !(p.speed > 0) || math.IsInf(p.speed, 0) {
		return usagef("--speed must be a positive number, got %v", p.speed)
	}
	if p.speed < minSpeed || p.speed > maxSpeed {
		return usagef("--speed must be between %g and %g, got %g", minSpeed, maxSpeed, p.speed)
	}
	if p.failRate < 0 || p.failRate > 1 || math.IsNaN(p.failRate) {
		return usagef("--fail-rate must be between 0 and 1, got %v", p.failRate)
	}
	return nil
}

// plan is the default scenario with the flags' seeded failures.
func (p *planFlags) plan() *lab.Plan {
	plan := lab.DefaultPlan()
	plan.Seed, plan.FailRate = p.seed, p.failRate
	return &plan
}

// checkBackend validates a --backend value.
func checkBackend(name string) error {
	switch lab.Backend(name) {
	case lab.InMem, lab.Rabbit:
		return nil
	}
	return usagef("--backend must be inmem or rabbit, got %q", name)
}

// pickBackend returns the backend to run lesson l on: the one named by
// --backend, or, when the flag is not given, the lesson's default (lessons
// 10 and 11 are about the broker, so `qlab run 10` runs there). A backend
// named explicitly that l lacks is a usage error.
func pickBackend(fs *flag.FlagSet, l lesson.Lesson, named string) (lab.Backend, error) {
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "backend" })
	if !explicit {
		return l.DefaultBackend(), nil
	}
	b := lab.Backend(named)
	if l.Runner(b) == nil {
		return "", usageError{lesson.ErrNoBackend{Lesson: l, Backend: b}}
	}
	return b, nil
}

// colorWanted reports whether w is a terminal and NO_COLOR is unset.
func colorWanted(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// explicitFlag reports whether the user gave flag name on the command line.
func explicitFlag(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// runSpeed is the speed `qlab run` goes at: --speed where given, else the
// lesson's own pace (Lesson.WatchSpeed) where that is faster than real
// time, so a long lesson (Q12's 30 s outage) does not take minutes.
func runSpeed(fs *flag.FlagSet, l lesson.Lesson, given float64) float64 {
	if explicitFlag(fs, "speed") || l.WatchSpeed <= 1 {
		return given
	}
	return l.WatchSpeed
}

// slowerNote is what qlab run says when the speed given is below the
// lesson's own pace: --speed is absolute (lesson time per real time), not
// a factor on that pace, so --speed 10 makes lesson 18 (600×) slower, and
// the note says how long the run will take. "" when the speed is not
// slower, or the lesson does not say its length.
func slowerNote(l lesson.Lesson, speed float64) string {
	if speed >= l.WatchSpeed || l.Length <= 0 {
		return ""
	}
	at := func(speed float64) string { return aboutDuration(time.Duration(float64(l.Length) / speed)) }
	return fmt.Sprintf("Note: --speed is lesson time per real time, not a factor on the lesson's own pace. "+
		"Lesson %d goes at %g× when no --speed is given (about %s); at --speed %g it takes about %s.",
		l.Number(), l.WatchSpeed, at(l.WatchSpeed), speed, at(speed))
}

// aboutDuration rounds d for a person: whole seconds under ten minutes,
// whole minutes above.
func aboutDuration(d time.Duration) string {
	if d < 10*time.Minute {
		return max(d.Round(time.Second), time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// ownSpeeds lists the lessons whose own speed (pace) is above usual:
// "2× for 12, 5× for 13".
func ownSpeeds(pace func(lesson.Lesson) float64, usual float64) string {
	var parts []string
	for _, l := range lessons.All {
		if s := pace(l); s > usual {
			parts = append(parts, fmt.Sprintf("%g× for %d", s, l.Number()))
		}
	}
	return strings.Join(parts, ", ")
}

// watchSpeed is a lesson's own pace for qlab run and the TUI.
func watchSpeed(l lesson.Lesson) float64 { return l.WatchSpeed }

// defaultingTo lists the lessons whose default backend is b, runs of
// consecutive numbers as ranges: "10, 11, 14–17".
func defaultingTo(b lab.Backend) string {
	var nums []int
	for _, l := range lessons.All {
		if l.DefaultBackend() == b {
			nums = append(nums, l.Number())
		}
	}
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, fmt.Sprintf("%d–%d", nums[i], nums[j]))
		case j > i:
			parts = append(parts, fmt.Sprint(nums[i]), fmt.Sprint(nums[j]))
		default:
			parts = append(parts, fmt.Sprint(nums[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

const versionHelp = `Usage: qlab version

Prints which qlab this is: the commit it was built from (and whether the
tree had changes), when, and the Go version. go build and go install
record the commit; go run, go test and -buildvcs=false do not.`

func cmdVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version", versionHelp)
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("version takes no arguments, got %q", pos)
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(stdout, "qlab: no build information in this binary")
		return nil
	}
	fmt.Fprintln(stdout, versionLine(info))
	return nil
}

// versionLine is one line on the build: module version, commit, and Go.
func versionLine(info *debug.BuildInfo) string {
	vcs := map[string]string{}
	for _, s := range info.Settings {
		vcs[s.Key] = s.Value
	}
	commit := "commit unknown (go run, go test and -buildvcs=false record none)"
	if rev := vcs["vcs.revision"]; rev != "" {
		commit = "commit " + rev[:min(len(rev), 12)]
		if vcs["vcs.modified"] == "true" {
			commit += " with uncommitted changes"
		}
		if at := vcs["vcs.time"]; at != "" {
			commit += ", " + at
		}
	}
	return fmt.Sprintf("qlab %s, %s, %s %s/%s", info.Main.Version, commit, info.GoVersion, vcs["GOOS"], vcs["GOARCH"])
}

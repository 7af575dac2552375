package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/queuelab/qlab/class"
	"github.com/queuelab/qlab/exercises"
)

const exHelp = `Usage: qlab ex [N | command] [flags]

Exercises: you write the mechanism of a lesson, qlab checks it.

  qlab ex [N]               watch mode: checks the current exercise (or
                            exercise N) on every save (keys: n next, h hint,
                            l list to pick one, r reset, c check, q quit)
  qlab ex list              every exercise and whether it is done
  qlab ex check N           check exercise N once; while it fails, exit 1
                            with a one-line summary on stderr (for scripts),
                            the report on stdout
  qlab ex check-all [--json] [--name NAME]
                            check every exercise; rebuilds your progress
                            (--json for instructors: each line carries name,
                            commit, host and time)
  qlab ex hint N            the next hint for exercise N, for what fails now
  qlab ex reset N           restore exercise N's file as it was shipped
  qlab ex solution N        the reference solution (once exercise N passes)

Run it inside your clone; it runs go test from the module root.`

var exCommands = map[string]func(ctx context.Context, root string, args []string, stdout io.Writer) error{
	"list":      exList,
	"check":     exCheck,
	"check-all": exCheckAll,
	"hint":      exHintCmd,
	"reset":     exReset,
	"solution":  exSolution,
}

func cmdEx(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("ex", exHelp)
	manual := fs.Bool("manual", false, "watch mode without watching files: press c to check (for file systems that report no changes)")
	noColor := fs.Bool("no-color", false, "no ANSI colour")
	jsonOut := fs.Bool("json", false, "check-all: one JSON object per exercise and a total, for a class to aggregate")
	name := fs.String("name", "", "check-all --json: the student's name in each line (default $USER)")
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := moduleRoot(cwd)
	if err != nil {
		return err
	}
	color := !*noColor && os.Getenv("NO_COLOR") == ""
	if len(pos) == 0 {
		return exWatch(ctx, root, exercises.Exercise{}, *manual, color)
	}
	if _, err := strconv.Atoi(pos[0]); err == nil {
		ex, err := exArg(pos)
		if err != nil {
			return err
		}
		return exWatch(ctx, root, ex, *manual, color)
	}
	sub, ok := exCommands[pos[0]]
	if !ok {
		return usagef("unknown ex command %q (see qlab ex --help)", pos[0])
	}
	if *jsonOut && pos[0] != "check-all" {
		return usagef("--json goes with check-all")
	}
	if *name != "" && !*jsonOut {
		return usagef("--name goes with check-all --json")
	}
	exJSON, exName = *jsonOut, *name
	exColor = exPaint(!*noColor && os.Getenv("NO_COLOR") == "" && isTerminal(stdout))
	return sub(ctx, root, pos[1:], stdout)
}

// Per-invocation options of the one-shot subcommands.
var (
	exJSON  bool
	exName  string
	exColor exPaint
)

// exArg parses the one exercise number a subcommand takes.
func exArg(args []string) (exercises.Exercise, error) {
	if len(args) != 1 {
		return exercises.Exercise{}, usagef("give one exercise number (qlab ex list shows them)")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return exercises.Exercise{}, usagef("exercise number %q is not a number", args[0])
	}
	ex, err := exercises.Find(n)
	if err != nil {
		return ex, usageError{err}
	}
	return ex, nil
}

func exList(_ context.Context, root string, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usagef("ex list takes no arguments")
	}
	st := loadExState(root)
	for _, ex := range exercises.All {
		mark, where := " ", "in memory"
		if st.done(ex.Dir) {
			mark = "✓"
		}
		if ex.Dir == st.Current {
			mark += "▶"
		} else {
			mark += " "
		}
		if ex.Broker {
			where = "RabbitMQ"
		}
		fmt.Fprintf(stdout, "%s %2d  %s  %-9s  %s\n", mark, ex.Number(), ex.Lesson, where, ex.Title)
	}
	fmt.Fprintf(stdout, "\n%d of %d done. ✓ done, ▶ current.\n", len(st.Done), len(exercises.All))
	return nil
}

// notYet is the error of a check that ran and failed: exit 1, and a
// one-line summary on stderr under the report on stdout, so a script
// (or a class's grader) sees why without parsing the report.
func notYet(r exRun) error {
	what := string(r.Status)
	switch r.Status {
	case exFail:
		what = fmt.Sprintf("%d of %d checks fail", len(r.Failed()), len(r.Results))
	case exBuild:
		what = "it does not compile"
	case exTimeout:
		what = "it never finished"
	case exDeadlock:
		what = "a deadlock"
	case exCrash:
		what = "it panicked"
	}
	return fmt.Errorf("exercise %d (%s) not passed yet: %s", r.Ex.Number(), r.Ex.Lesson, what)
}

func exCheck(ctx context.Context, root string, args []string, stdout io.Writer) error {
	ex, err := exArg(args)
	if err != nil {
		return err
	}
	r := runExercise(ctx, root, ex)
	reportExercise(ctx, r, os.Stderr)
	if _, err := updateExState(root, func(st *exState) {
		st.record(r)
		st.Current = ex.Dir
	}); err != nil {
		return err
	}
	fmt.Fprintln(stdout, exColor.bold(exHeading(ex))+"  "+exColor.faint(ex.Path()))
	fmt.Fprint(stdout, exReport(r, exColor))
	if r.Status == exPass || r.Status == exSkip {
		return nil
	}
	if text, n := exHint(r, 1); n > 0 {
		fmt.Fprintf(stdout, "\nHint: %s\n%s\n", text, exColor.faint(fmt.Sprintf("(qlab ex hint %d for more)", ex.Number())))
	}
	return notYet(r)
}

// exWhoFields say whose run a line of check-all's JSON is, so an
// instructor can pool a class's output: the student's name (--name, else
// $USER or $USERNAME), the commit their clone is at (with "+changes" when
// the tree differs from it; empty without git), the host and the time.
type exWhoFields struct {
	Name   string `json:"name"`
	Commit string `json:"commit,omitempty"`
	Host   string `json:"host"`
	Time   string `json:"time"`
}

// exWho fills exWhoFields for this run.
func exWho(root string) exWhoFields {
	w := exWhoFields{Name: exStudentName(os.Stdin, os.Stderr), Time: time.Now().UTC().Format(time.RFC3339)}
	w.Host, _ = os.Hostname()
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		w.Commit = strings.TrimSpace(string(out))
		if diff, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(diff) > 0 {
			w.Commit += "+changes"
		}
	}
	return w
}

// exStudentName is the name check-all's JSON carries: --name, else
// $USER, else $USERNAME (Windows), else the name given to qlab class join,
// else one asked for once on a terminal and remembered. Without any of
// these it says so on warn and answers "unknown", so a line is never
// nameless.
func exStudentName(in *os.File, warn io.Writer) string {
	if name := cmp.Or(exName, os.Getenv("USER"), os.Getenv("USERNAME")); name != "" {
		return name
	}
	m, _, _ := class.Load()
	if m.Name != "" {
		return m.Name
	}
	if isTerminal(in) {
		fmt.Fprint(warn, "Your name for the class's table (asked once): ")
		line, _ := bufio.NewReader(in).ReadString('\n')
		if name := strings.TrimSpace(line); class.CheckName(name) == nil {
			m.Name = name
			if err := m.Save(); err != nil {
				fmt.Fprintln(warn, "qlab ex: could not remember the name: "+err.Error())
			}
			return name
		}
	}
	fmt.Fprintln(warn, `qlab ex: no name for the JSON lines ($USER and $USERNAME are unset): they say "unknown"; pass --name NAME`)
	return "unknown"
}

// exTotalLine is check-all's last JSON line.
type exTotalLine struct {
	exWhoFields
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// exStatusLine is one exercise in check-all's JSON output.
type exStatusLine struct {
	exWhoFields
	N       int      `json:"n"`
	Dir     string   `json:"dir"`
	Lesson  string   `json:"lesson"`
	Status  exStatus `json:"status"`
	Failed  []string `json:"failed,omitempty"`
	Skipped string   `json:"skipped,omitempty"`
	Ms      int64    `json:"ms"`
}

func exCheckAll(ctx context.Context, root string, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usagef("ex check-all takes no arguments")
	}
	var runs []exRun
	enc := json.NewEncoder(stdout)
	who := exWho(root)
	passed := 0
	for _, ex := range exercises.All {
		r := runExercise(ctx, root, ex)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		runs = append(runs, r)
		reportExercise(ctx, r, os.Stderr)
		if r.Status == exPass {
			passed++
		}
		if exJSON {
			line := exStatusLine{exWhoFields: who, N: ex.Number(), Dir: ex.Dir, Lesson: ex.Lesson, Status: r.Status, Failed: r.Failed(), Ms: r.Took.Milliseconds()}
			if r.Status == exSkip {
				line.Skipped = r.Results[0].Skip
			}
			_ = enc.Encode(line)
			continue
		}
		mark := exColor.bad("✗")
		switch r.Status {
		case exPass:
			mark = exColor.good("✓")
		case exSkip:
			mark = exColor.faint("–")
		}
		fmt.Fprintf(stdout, "%s %2d  %s  %-8s  %s\n", mark, ex.Number(), ex.Lesson, r.Status, ex.Title)
	}
	if _, err := updateExState(root, func(st *exState) {
		st.Done = nil // re-derived from the code as it is now
		for _, r := range runs {
			st.record(r)
		}
		if next, ok := st.next(); ok {
			st.Current = next.Dir
		}
	}); err != nil {
		return err
	}
	if exJSON {
		return enc.Encode(exTotalLine{exWhoFields: who, Passed: passed, Total: len(exercises.All)})
	}
	fmt.Fprintf(stdout, "\n%d of %d pass.\n", passed, len(exercises.All))
	return nil
}

func exHintCmd(ctx context.Context, root string, args []string, stdout io.Writer) error {
	ex, err := exArg(args)
	if err != nil {
		return err
	}
	r := runExercise(ctx, root, ex)
	if len(ex.Hints) == 0 {
		return fmt.Errorf("exercise %d has no hints", ex.Number())
	}
	st, err := updateExState(root, func(st *exState) { st.Hints[ex.Dir]++ })
	if err != nil {
		return err
	}
	text, n := exHint(r, st.Hints[ex.Dir])
	fmt.Fprintf(stdout, "Hint %d of %d for exercise %d: %s\n", min(st.Hints[ex.Dir], n), n, ex.Number(), text)
	return nil
}

func exReset(_ context.Context, root string, args []string, stdout io.Writer) error {
	ex, err := exArg(args)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, ex.Path()), ex.Stub(), 0o644); err != nil {
		return err
	}
	if _, err := updateExState(root, func(st *exState) {
		st.record(exRun{Ex: ex, Status: exFail})
		delete(st.Hints, ex.Dir)
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s is back as it was shipped.\n", ex.Path())
	return nil
}

func exSolution(_ context.Context, root string, args []string, stdout io.Writer) error {
	ex, err := exArg(args)
	if err != nil {
		return err
	}
	if !loadExState(root).done(ex.Dir) {
		return fmt.Errorf("exercise %d has not passed yet: the solution shows once it does (qlab ex check %d)", ex.Number(), ex.Number())
	}
	fmt.Fprintf(stdout, "// The reference solution of exercise %d (yours passed too; compare).\n", ex.Number())
	_, err = stdout.Write(ex.Solution())
	return err
}

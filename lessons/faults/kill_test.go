package faults

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/store/sqlstore"
)

var (
	qlabOnce sync.Once
	qlabBin  string
	qlabErr  error
)

// binDir is the directory of the qlab binary buildQlab builds (about
// 38 MB): TestMain removes it at the end, and at once on SIGINT or
// SIGTERM, which end the process before that.
var binDir struct {
	sync.Mutex
	path string
}

// removeBin removes binDir, if one was made.
func removeBin() {
	binDir.Lock()
	defer binDir.Unlock()
	if binDir.path != "" {
		os.RemoveAll(binDir.path)
		binDir.path = ""
	}
}

// buildQlab builds ./cmd/qlab once for the package.
func buildQlab() {
	qlabOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qlabfault-bin-")
		if err != nil {
			qlabErr = err
			return
		}
		binDir.Lock()
		binDir.path = dir
		binDir.Unlock()
		qlabBin = filepath.Join(dir, "qlab")
		out, err := exec.Command("go", "build", "-o", qlabBin, "github.com/queuelab/qlab/cmd/qlab").CombinedOutput()
		if err != nil {
			qlabErr = fmt.Errorf("building qlab: %v: %s", err, out)
		}
	})
}

// qlab is the qlab binary, built once for the package.
func qlab(t *testing.T) string {
	t.Helper()
	buildQlab()
	if qlabErr != nil {
		t.Fatal(qlabErr)
	}
	return qlabBin
}

// resetCmd finds the queues a refused run names in its reset command.
var resetCmd = regexp.MustCompile(`rabbitmqctl delete_queue (\S+?)(;|\s|$)`)

// killed runs each lesson kept for it (killLessons) as a child qlab on the
// private node, SIGKILLs it at a seeded line of its JSON output, and has a
// second process take over: the same run (same --prefix) must refuse to
// start on the killed run's queues without touching them and name the
// command that removes exactly those; qlab broker clean with the prefix
// the killed run printed removes them all; after that a third run
// completes and leaves nothing behind. Each case's processes share a
// TMPDIR of their own: the killed run's SQLite store dir, which clean
// must remove too, is the only one there (and so is a schema named after
// the prefix, on PostgreSQL).
func killed(t *testing.T) {
	// The build and the node's start each take tens of seconds on a busy
	// machine (at load 40 the cases began 98 s in, the node's start about
	// 30 s of it): one beside the other. Even a skip waits for the build,
	// so no goroutine of it is left for goleak.
	built := make(chan struct{})
	go func() {
		defer close(built)
		if !testing.Short() {
			buildQlab()
		}
	}()
	defer func() { <-built }()
	n := runNode.get(t)
	bin := qlab(t)
	ls := lessonsOf(t, killLessons)
	var slugs []string
	for _, l := range ls {
		slugs = append(slugs, l.Slug())
	}
	// Each case has its own prefix and disturbs no one else's queues.
	concurrently(t, slugs, func(t *testing.T, i int) {
		l := ls[i]
		// The moment by the lesson's place among all enrolled ones, as
		// when every lesson was killed (see moments).
		e := slices.IndexFunc(enrolled(), func(e lesson.Lesson) bool { return e.ID == l.ID })
		at := 3 + int(seed()+uint64(e))%8
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		k := killLeaving(t, ctx, bin, n, l, i, at)
		prefix, tmp, env, left := k.prefix, k.tmp, k.env, k.left
		printed, seen := k.printed, k.seen
		out, refused := runQlab(t, bin, env, l, prefix)
		named := map[string]bool{}
		for _, m := range resetCmd.FindAllStringSubmatch(out, -1) {
			named[m[1]] = true
		}
		if refused == 0 || len(named) == 0 {
			t.Fatalf("the second run did not refuse the killed run's queues (exit %d): %s", refused, out)
		}
		still := queuesUnder(t, n.Queues, ctx, prefix)
		if fmt.Sprint(still) != fmt.Sprint(left) {
			t.Errorf("the refused run changed the killed run's queues: %v, then %v", left, still)
		}
		for _, q := range left {
			if !named[q] {
				t.Errorf("the refusal does not name leftover queue %s: %s", q, out)
			}
		}
		cleanOut, code := qlabCmd(t, bin, env, "broker", "clean", "--prefix", printed, "--lesson", strconv.Itoa(l.Number()))
		if code != 0 {
			t.Fatalf("qlab broker clean failed (exit %d): %s", code, cleanOut)
		}
		for _, q := range left {
			if !strings.Contains(cleanOut, "deleted queue "+q+" ") {
				t.Errorf("qlab broker clean does not list leftover queue %s as deleted: %s", q, cleanOut)
			}
		}
		if after := queuesUnder(t, n.Queues, ctx, prefix); len(after) > 0 {
			t.Fatalf("qlab broker clean left the killed run's queues: %v (a lesson's Topologies misses them?)", after)
		}
		assertNoStore(t, tmp, prefix)
		out, code = runQlab(t, bin, env, l, prefix)
		if code != 0 {
			t.Fatalf("the run after the clean-up failed (exit %d): %s", code, out)
		}
		if after := queuesUnder(t, n.Queues, ctx, prefix); len(after) > 0 {
			t.Errorf("the resumed run left its queues behind: %v", after)
		}
		report(t, fmt.Sprintf("fault=kill    lesson=%s killed after %d events; left %d queues, refused by the next run (exit %d), removed by qlab broker clean, rerun clean %.1fs",
			l.Slug(), seen, len(left), refused, time.Since(start).Seconds()))
	})
}

// killTries bounds how many runs killLeaving kills.
const killTries = 3

// kill is one killed run: its prefix, TMPDIR and environment, the events
// read before the kill, the prefix it printed and the queues it left.
type kill struct {
	prefix, tmp, printed string
	env                  []string
	seen                 int
	left                 []string
}

// killLeaving runs case i's lesson l and kills it at event at (killAt)
// until a killed run leaves a queue, at most killTries times. The kill
// falls at a line the test has read, and the run writes ahead of its
// reader (the pipe's buffer): on a loaded machine it may be between two
// parts by then, their queues deleted (w1, 2026-11-28: Q18 at its third
// to tenth event). Each try has a prefix and a TMPDIR of its own; one
// that left no queue is cleaned with qlab broker clean (its store may be
// there) and the next kills at the third event.
func killLeaving(t *testing.T, ctx context.Context, bin string, n *rabbittest.Node, l lesson.Lesson, i, at int) kill {
	t.Helper()
	for try := 1; ; try++ {
		k := kill{prefix: fmt.Sprintf("kill%d-%d-%d", os.Getpid(), i, try), tmp: t.TempDir()}
		ran(n, k.prefix+".")
		k.env = []string{"RABBITMQ_URL=" + n.URL, "TMPDIR=" + k.tmp}
		k.seen, k.printed = killAt(t, bin, k.env, l, k.prefix, at)
		if k.printed != k.prefix {
			t.Errorf("the killed run printed the prefix %q, want %q (its user needs it for qlab broker clean)", k.printed, k.prefix)
		}
		if k.left = queuesUnder(t, n.Queues, ctx, k.prefix); len(k.left) > 0 {
			return k
		}
		if try == killTries {
			t.Fatalf("%d killed runs left no queue (the last at event %d): each was killed too late to test anything", try, at)
		}
		t.Logf("killed at event %d, the run had no queue: trying again at event 3", at)
		if out, code := qlabCmd(t, bin, k.env, "broker", "clean", "--prefix", k.prefix, "--lesson", strconv.Itoa(l.Number())); code != 0 {
			t.Fatalf("qlab broker clean after a try failed (exit %d): %s", code, out)
		}
		at = 3
	}
}

// printedPrefix finds the prefix a run prints on stderr when it starts.
var printedPrefix = regexp.MustCompile(`under the prefix (\S+);`)

// killAt starts l as a child qlab and SIGKILLs it once it has printed at
// JSON events; it returns how many it saw and the prefix the run printed.
func killAt(t *testing.T, bin string, env []string, l lesson.Lesson, prefix string, at int) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, qlabArgs(l, prefix, "--json")...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && seen < at {
		if strings.HasPrefix(sc.Text(), "{") {
			seen++
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if seen < at {
		t.Fatalf("the run ended after %d events, before the kill at %d", seen, at)
	}
	var printed string
	if m := printedPrefix.FindStringSubmatch(stderr.String()); m != nil {
		printed = m[1]
	}
	return seen, printed
}

// runQlab runs l to the end as a child qlab and returns its output and
// exit code.
func runQlab(t *testing.T, bin string, env []string, l lesson.Lesson, prefix string) (string, int) {
	t.Helper()
	return qlabCmd(t, bin, env, qlabArgs(l, prefix)...)
}

// qlabCmd runs qlab with args and env added to the test's (the broker's
// URL, at least), within runBound, and returns its output and exit code.
func qlabCmd(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("qlab %v hung past %v", args, runBound)
	}
	if exit, ok := err.(*exec.ExitError); ok {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func qlabArgs(l lesson.Lesson, prefix string, extra ...string) []string {
	speed := l.TestSpeed
	if speed == 0 {
		speed = 20
	}
	args := []string{"run", strconv.Itoa(l.Number()), "--backend", "rabbit", "--speed", strconv.FormatFloat(speed, 'g', -1, 64),
		"--names", "exact", "--prefix", prefix, "--no-color"}
	return append(args, extra...)
}

// queuesUnder lists the node's queues under prefix.
func queuesUnder(t *testing.T, list func(context.Context) ([]string, error), ctx context.Context, prefix string) []string {
	t.Helper()
	queues, err := list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var under []string
	for _, q := range queues {
		if strings.HasPrefix(q, prefix+".") {
			under = append(under, q)
		}
	}
	return under
}

// assertNoStore checks that no status store of a run under prefix is
// left: no SQLite dir in tmp (the case's TMPDIR, where only its runs
// make one) and, when the suite runs on PostgreSQL, no schema named after
// the prefix.
func assertNoStore(t *testing.T, tmp, prefix string) {
	t.Helper()
	if dirs, _ := filepath.Glob(filepath.Join(tmp, "*-q[0-9][0-9]-*")); len(dirs) > 0 {
		t.Errorf("qlab broker clean left the killed run's SQLite store: %v", dirs)
	}
	url := os.Getenv(sqlstore.EnvURL)
	if !strings.HasPrefix(url, "postgres") {
		return
	}
	tag := strings.ReplaceAll(strings.ToLower(prefix), "-", "_") + "_q"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left, _, err := sqlstore.DropDeadSchemas(ctx, url, func(s string) bool { return strings.HasPrefix(s, tag) }, true)
	if err != nil {
		t.Errorf("listing schemas: %v", err)
	}
	if len(left) > 0 {
		t.Errorf("qlab broker clean left the killed run's schemas: %v", left)
	}
}

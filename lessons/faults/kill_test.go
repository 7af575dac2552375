package faults

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lesson"
)

var (
	qlabOnce sync.Once
	qlabBin  string
	qlabErr  error
)

// qlab builds ./cmd/qlab once for the package.
func qlab(t *testing.T) string {
	t.Helper()
	qlabOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qlabfault-bin-")
		if err != nil {
			qlabErr = err
			return
		}
		qlabBin = filepath.Join(dir, "qlab")
		out, err := exec.Command("go", "build", "-o", qlabBin, "github.com/queuelab/qlab/cmd/qlab").CombinedOutput()
		if err != nil {
			qlabErr = fmt.Errorf("building qlab: %v: %s", err, out)
		}
	})
	if qlabErr != nil {
		t.Fatal(qlabErr)
	}
	return qlabBin
}

// resetCmd finds the queues a refused run names in its reset command.
var resetCmd = regexp.MustCompile(`rabbitmqctl delete_queue (\S+?)(;|\s|$)`)

// TestKilled runs each enrolled lesson as a child qlab process on the
// private node, SIGKILLs it at a seeded line of its JSON output, and has a
// second process take over: the same run (same --prefix) must refuse to
// start on the killed run's queues without touching them and name the
// command that removes exactly those; after that command a third run
// completes and leaves nothing behind.
func TestKilled(t *testing.T) {
	n := sharedNode(t)
	bin := qlab(t)
	for i, l := range enrolled() {
		t.Run(l.Slug(), func(t *testing.T) {
			prefix := fmt.Sprintf("kill%d-%d", os.Getpid(), i)
			at := 3 + int(seed()+uint64(i))%8
			start := time.Now()
			seen := killAt(t, bin, n.URL, l, prefix, at)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			left := queuesUnder(t, n.Queues, ctx, prefix)
			if len(left) == 0 {
				t.Fatalf("the killed run left no queue: it was killed too late to test anything")
			}
			out, refused := runQlab(t, bin, n.URL, l, prefix)
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
			deleteQueues(t, n.URL, left) // what the named rabbitmqctl delete_queue commands do, over AMQP (faster)
			out, code := runQlab(t, bin, n.URL, l, prefix)
			if code != 0 {
				t.Fatalf("the run after the clean-up failed (exit %d): %s", code, out)
			}
			if after := queuesUnder(t, n.Queues, ctx, prefix); len(after) > 0 {
				t.Errorf("the resumed run left its queues behind: %v", after)
			}
			report(t, fmt.Sprintf("fault=kill    lesson=%s killed after %d events; left %d queues, refused by the next run (exit %d), removed with its reset command, rerun clean %.1fs",
				l.Slug(), seen, len(left), refused, time.Since(start).Seconds()))
		})
	}
}

// killAt starts l as a child qlab and SIGKILLs it once it has printed at
// JSON events; it returns how many it saw.
func killAt(t *testing.T, bin, url string, l lesson.Lesson, prefix string, at int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, qlabArgs(l, prefix, "--json")...)
	cmd.Env = append(os.Environ(), "RABBITMQ_URL="+url)
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
	return seen
}

// runQlab runs l to the end as a child qlab and returns its output and
// exit code.
func runQlab(t *testing.T, bin, url string, l lesson.Lesson, prefix string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, qlabArgs(l, prefix)...)
	cmd.Env = append(os.Environ(), "RABBITMQ_URL="+url)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("qlab %v hung past %v", qlabArgs(l, prefix), runBound)
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

// deleteQueues deletes queues on the broker at url.
func deleteQueues(t *testing.T, url string, queues []string) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			t.Fatalf("deleting %s: %v", q, err)
		}
	}
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

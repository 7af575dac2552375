// Command benchcheck guards the lab's speed without asserting it: it runs
// each of the lab's paths against a hand-rolled yardstick doing the same
// work, interleaved in one run (yardstick, lab, lab, yardstick, ...), and
// prints the ratios. A regression shows as a ratio that drops; nothing
// fails on a number, because a shared machine moves single runs a lot.
//
//   - In memory: inmem's BenchmarkQueue (the lab's Queue, Worker and
//     Stream) against BenchmarkRawContract (the same event contract
//     written by hand on a bare channel). Goal: contract ÷ lab ≥ 0.8, and
//     bytes allocated per message at most twice the contract's.
//   - Broker: rabbit's BenchmarkPublishConsume (the lab's Publisher and
//     Consumer) against BenchmarkRawAMQP (bare amqp091-go), publish and
//     consume rates. Skipped, with the reason, when no broker answers.
//
// `make bench-check` runs it; `make bench-docs` also rewrites the marked
// section of docs/benchmarks.md from the same output (-write).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func main() {
	rounds := flag.Int("rounds", 5, "interleaved rounds of each pair (1-50)")
	inmemN := flag.Int("inmem-n", 300000, "messages per in-memory benchmark run")
	brokerN := flag.Int("broker-n", 4000, "messages per broker benchmark run")
	broker := flag.Bool("broker", true, "also compare the broker path (skipped when no broker answers)")
	write := flag.String("write", "", "rewrite the bench-check section of this markdown file with the results")
	flag.Parse()
	if *rounds < 1 || *rounds > 50 || *inmemN < 1000 || *brokerN < 100 {
		fmt.Fprintln(os.Stderr, "benchcheck: --rounds must be 1-50, --inmem-n at least 1000, --broker-n at least 100")
		os.Exit(2)
	}
	out, err := run(*rounds, *inmemN, *brokerN, *broker)
	fmt.Print(out)
	if err == nil && *write != "" {
		err = rewrite(*write, out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcheck:", err)
		os.Exit(1)
	}
}

// run measures and returns the report.
func run(rounds, inmemN, brokerN int, broker bool) (string, error) {
	dir, err := os.MkdirTemp("", "qlab-benchcheck-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)

	var b strings.Builder
	fmt.Fprintf(&b, "bench-check: %d interleaved rounds, %s %s/%s, %d CPUs, load %s\n",
		rounds, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadAverage())

	inmem, err := compile(dir, "./inmem")
	if err != nil {
		return b.String(), err
	}
	pair := pairSpec{bin: inmem, yardstick: "BenchmarkRawContract", lab: "BenchmarkQueue", n: inmemN}
	res, err := pair.measure(rounds)
	if err != nil {
		return b.String(), err
	}
	writeInMem(&b, res, inmemN)

	if !broker {
		return b.String(), nil
	}
	version, err := brokerVersion()
	if err != nil {
		fmt.Fprintf(&b, "broker: skipped (%v)\n", err)
		return b.String(), nil
	}
	rabbit, err := compile(dir, "./rabbit")
	if err != nil {
		return b.String(), err
	}
	pair = pairSpec{bin: rabbit, yardstick: "BenchmarkRawAMQP", lab: "BenchmarkPublishConsume", n: brokerN}
	res, err = pair.measure(rounds)
	if err != nil {
		return b.String(), err
	}
	writeBroker(&b, res, brokerN, version)
	return b.String(), nil
}

// compile builds pkg's test binary into dir (go test -c: the build cache
// makes a second run cheap).
func compile(dir, pkg string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg)+".test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the %s benchmarks: %w", pkg, err)
	}
	return bin, nil
}

// pairSpec is a yardstick benchmark and the lab's benchmark doing the same
// work, in one test binary, n messages a run.
type pairSpec struct {
	bin, yardstick, lab string
	n                   int
}

// results holds each benchmark's metrics, one map per round.
type results struct {
	yardstick, lab []map[string]float64
}

// measure runs the pair rounds times, alternating which goes first, so
// neither always runs on the warmer (or busier) side of the other.
func (p pairSpec) measure(rounds int) (results, error) {
	var r results
	for i := range rounds {
		order := []string{p.yardstick, p.lab}
		if i%2 == 1 {
			order = []string{p.lab, p.yardstick}
		}
		for _, name := range order {
			m, err := p.once(name)
			if err != nil {
				return r, err
			}
			if name == p.lab {
				r.lab = append(r.lab, m)
			} else {
				r.yardstick = append(r.yardstick, m)
			}
		}
	}
	return r, nil
}

// errSkipped is a benchmark that skipped itself (no broker).
var errSkipped = errors.New("skipped")

// once runs one benchmark for p.n iterations and parses its metrics.
func (p pairSpec) once(name string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bin, "-test.run", "^$", "-test.bench", "^"+name+"$",
		"-test.benchtime", strconv.Itoa(p.n)+"x", "-test.benchmem", "-test.count", "1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", name, err, lastLines(out, 10))
	}
	m := parse(out, name)
	if m == nil {
		if bytes.Contains(out, []byte("SKIP")) {
			return nil, fmt.Errorf("%s: %w\n%s", name, errSkipped, lastLines(out, 5))
		}
		return nil, fmt.Errorf("%s: no result line in its output\n%s", name, lastLines(out, 10))
	}
	return m, nil
}

// parse reads the "BenchmarkX-2  N  v unit  v unit ..." line of name.
func parse(out []byte, name string) map[string]float64 {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || (f[0] != name && !strings.HasPrefix(f[0], name+"-")) {
			continue
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
		return m
	}
	return nil
}

// ratios returns num[i][unit] ÷ den[i][unit] for every round.
func ratios(num, den []map[string]float64, unit string) []float64 {
	var out []float64
	for i := range min(len(num), len(den)) {
		if d := den[i][unit]; d > 0 {
			out = append(out, num[i][unit]/d)
		}
	}
	return out
}

// median of xs (xs is sorted in place); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// spread describes xs as "median (low–high)".
func spread(xs []float64, format string) string {
	m := median(xs)
	if len(xs) < 2 {
		return fmt.Sprintf(format, m)
	}
	return fmt.Sprintf(format+" (rounds "+format+"–"+format+")", m, xs[0], xs[len(xs)-1])
}

func metric(ms []map[string]float64, unit string) []float64 {
	var out []float64
	for _, m := range ms {
		out = append(out, m[unit])
	}
	return out
}

// The report's lines fit 80 columns: docs/benchmarks.md shows it as is.
func writeInMem(w io.Writer, r results, n int) {
	fmt.Fprintf(w, "in memory: BenchmarkQueue (lab) vs BenchmarkRawContract (by hand), %d msgs\n", n)
	fmt.Fprintf(w, "  ns/op, median:        lab %.0f, contract %.0f\n",
		median(metric(r.lab, "ns/op")), median(metric(r.yardstick, "ns/op")))
	fmt.Fprintf(w, "  contract ÷ lab, wall: %s   goal ≥ 0.80\n", spread(ratios(r.yardstick, r.lab, "ns/op"), "%.2f"))
	if cpu := ratios(r.yardstick, r.lab, "cpu-ns/op"); len(cpu) > 0 {
		fmt.Fprintf(w, "  contract ÷ lab, CPU:  %s\n", spread(cpu, "%.2f"))
	}
	fmt.Fprintf(w, "  B/op, median:         lab %.0f, contract %.0f: %.2f×   goal ≤ 2×\n",
		median(metric(r.lab, "B/op")), median(metric(r.yardstick, "B/op")),
		median(ratios(r.lab, r.yardstick, "B/op")))
	fmt.Fprintf(w, "  allocs/op, median:    lab %.0f, contract %.0f\n",
		median(metric(r.lab, "allocs/op")), median(metric(r.yardstick, "allocs/op")))
}

func writeBroker(w io.Writer, r results, n int, version string) {
	fmt.Fprintf(w, "broker: BenchmarkPublishConsume (lab) vs BenchmarkRawAMQP (bare amqp091-go),\n")
	fmt.Fprintf(w, "  RabbitMQ %s, %d msgs a run\n", version, n)
	for _, u := range []struct{ unit, what string }{{"pub-msg/s", "publish"}, {"con-msg/s", "consume"}} {
		fmt.Fprintf(w, "  %s msg/s, median: lab %.0f, bare %.0f\n", u.what,
			median(metric(r.lab, u.unit)), median(metric(r.yardstick, u.unit)))
		fmt.Fprintf(w, "  %s, lab ÷ bare:   %s\n", u.what, spread(ratios(r.lab, r.yardstick, u.unit), "%.2f"))
	}
}

// brokerVersion dials the broker the tests would use (RABBITMQ_URL when
// set, and then only it) and returns its version.
func brokerVersion() (string, error) {
	url := os.Getenv("RABBITMQ_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		return "", errors.New("no RabbitMQ answered (set RABBITMQ_URL or start one)")
	}
	defer conn.Close()
	v, _ := conn.Properties["version"].(string)
	return v, nil
}

// loadAverage is the 1-minute load average, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// lastLines is the tail of a command's output, for an error.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// The section of a markdown file that -write replaces.
const (
	beginMark = "<!-- bench-check: begin (make bench-docs rewrites this block) -->"
	endMark   = "<!-- bench-check: end -->"
)

// rewrite replaces the text between the marks in path with report, as a
// code block stamped with the date.
func rewrite(path, report string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(doc)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q section", path, beginMark, endMark)
	}
	block := beginMark + "\n\n```\n" + "measured " + time.Now().UTC().Format("2006-01-02 15:04 MST") + "\n" + report + "```\n\n"
	return os.WriteFile(path, []byte(s[:i]+block+s[j:]), 0o644)
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/queuelab/qlab/exercises"
	"github.com/queuelab/qlab/exercises/check"
)

// exStatus is what one check of an exercise came to.
type exStatus string

const (
	exPass     exStatus = "pass"     // every check passed
	exFail     exStatus = "fail"     // at least one check failed
	exBuild    exStatus = "build"    // the code does not compile
	exTimeout  exStatus = "timeout"  // go test's -timeout ended it
	exDeadlock exStatus = "deadlock" // every goroutine of the run was blocked
	exCrash    exStatus = "panic"    // the code panicked
	exSkip     exStatus = "skip"     // cannot be checked here (no broker)
)

// exTimeouts bound one check: in memory fake time makes a correct run
// instant, so the bound only catches a loop that burns real CPU; a broker
// exercise waits real TTLs.
const (
	exTimeoutInMem  = 20 * time.Second
	exTimeoutBroker = 2 * time.Minute
)

// exRun is one run of an exercise's checker.
type exRun struct {
	Ex      exercises.Exercise
	Status  exStatus
	Results []check.Result
	Output  string // go test's output other than results: compiler errors, unaltered
	Took    time.Duration
}

// Failed returns the names of the checks that failed.
func (r exRun) Failed() []string {
	var out []string
	for _, res := range r.Results {
		if !res.Pass && res.Skip == "" {
			out = append(out, res.Check)
		}
	}
	return out
}

// runExercise runs ex's checker with go test from the module root, so the
// student needs nothing but Go.
func runExercise(ctx context.Context, root string, ex exercises.Exercise) exRun {
	limit, count := exTimeoutInMem, []string{} // a passing in-memory run may come from go's test cache: same code, same result
	if ex.Broker {
		limit, count = exTimeoutBroker, []string{"-count=1"} // the broker is outside what the cache knows
	}
	// -v: go test shows a passing package's output (the checks) only then.
	// -vet=off and a link without symbol table or DWARF (-s -w; stack
	// traces keep their file:line) save a few hundred ms of a re-check:
	// vet is not the check, and the compiler's errors come all the same.
	args := append([]string{"test", "-v", "-vet=off", "-ldflags=-s -w", "-tags", "qlabex", "-timeout", limit.String()}, count...)
	args = append(args, ex.Package())
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	run := exRun{Ex: ex, Took: time.Since(start)}
	run.Results, run.Output = check.Parse(out.String())
	run.Status = classify(run, err)
	return run
}

// classify names what the run came to from its exit and output.
func classify(r exRun, err error) exStatus {
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		return exBuild // go itself did not run; the output says why
	case strings.Contains(r.Output, "[build failed]") || strings.Contains(r.Output, "[setup failed]"):
		return exBuild
	case strings.Contains(r.Output, "panic: test timed out"):
		return exTimeout
	case strings.Contains(r.Output, "deadlock"):
		return exDeadlock
	case strings.Contains(r.Output, "panic:") && (err != nil || len(r.Results) == 0):
		return exCrash
	}
	for _, res := range r.Results {
		if res.Skip != "" {
			return exSkip
		}
	}
	if err != nil || len(r.Results) == 0 || len(r.Failed()) > 0 {
		return exFail
	}
	return exPass
}

// moduleRoot finds the QueueLab module from dir upwards.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/queuelab/qlab\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("not inside the QueueLab checkout (no go.mod of github.com/queuelab/qlab above %s): cd into your clone first", dir)
		}
	}
}

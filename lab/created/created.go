// Package created keeps, for a test run, a record of what each process
// creates on the shared servers: the queue prefixes it declares under
// and the PostgreSQL schemas it makes. A test's cleanup runs only when
// the test ends by itself; Ctrl-C, go test's -timeout and SIGKILL end the
// process first and leave its queues and schemas behind. The record is a
// file per process, written before each declare, so it outlives the
// process: make test reads it when the tests end, however they end, and
// deletes what dead processes left (qlab broker clean --created).
//
// Nothing is recorded unless EnvDir names a directory: a lesson a person
// runs keeps no record.
package created

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// EnvDir names the directory the records go to (make test sets it).
const EnvDir = "QLAB_CREATED_DIR"

// What a line of a record names.
const (
	kindPrefix = "prefix"
	kindSchema = "schema"
	kindOpened = "opened"
	kindClosed = "closed"
)

// Prefix records that this process declares queues and exchanges under
// run prefix p (qlab-3f9a1c, without the dot).
func Prefix(p string) { record(kindPrefix, p) }

// Opened records that a session opened under prefix p: it may declare
// under p until it is Closed.
func Opened(p string) { record(kindOpened, p) }

// Closed records that a session under prefix p closed and deleted all it
// had declared, leaving nothing behind. Call it once per Opened, and only
// then.
func Closed(p string) { record(kindClosed, p) }

// Schema records that this process creates PostgreSQL schema s.
func Schema(s string) { record(kindSchema, s) }

var (
	mu     sync.Mutex
	warned bool
)

// record appends one line to this process's record. A record that cannot
// be written is said once on stderr and does not stop the test: the
// test's own cleanup still runs when it ends by itself.
func record(kind, name string) {
	dir := os.Getenv(EnvDir)
	if dir == "" || name == "" {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		var f *os.File
		f, err = os.OpenFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "%s %s\n", kind, name)
			err = errors.Join(err, f.Close())
		}
	}
	if err != nil && !warned {
		warned = true
		fmt.Fprintf(os.Stderr, "qlab: cannot record %s %s in %s=%s: %v\n", kind, name, EnvDir, dir, err)
	}
}

// Record is what one process recorded.
type Record struct {
	Pid      int
	Path     string   // the record's file
	Prefixes []string // run prefixes, without the dot
	Schemas  []string
	// Settled are the Prefixes every session of which that opened (at
	// least one) also closed clean: a run that ended by itself left
	// nothing under them, unless it declared there outside a session.
	Settled []string
}

// Unsettled is r's Prefixes without its Settled ones: those a process
// killed mid-run may have left queues under.
func (r Record) Unsettled() []string {
	var out []string
	for _, p := range r.Prefixes {
		if !slices.Contains(r.Settled, p) {
			out = append(out, p)
		}
	}
	return out
}

// Alive reports whether the process that wrote r still runs.
func (r Record) Alive() bool { return alive(r.Pid) }

// Read returns the records in dir (none if dir does not exist), by pid.
// A file whose name is not a pid is not a record and is skipped.
func Read(dir string) ([]Record, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []Record
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || e.IsDir() {
			continue
		}
		r, err := readRecord(filepath.Join(dir, e.Name()), pid)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b Record) int { return a.Pid - b.Pid })
	return recs, nil
}

func readRecord(path string, pid int) (Record, error) {
	r := Record{Pid: pid, Path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	// Each line is written whole before its declare; a last line without
	// its newline was cut short by a kill, and its name may be cut too
	// (a shorter prefix would match another run's queues): skip it.
	lines := strings.Split(string(data), "\n")
	open := map[string]int{} // sessions opened less those closed clean, by prefix
	for _, line := range lines[:len(lines)-1] {
		kind, name, _ := strings.Cut(line, " ")
		switch {
		case name == "":
		case kind == kindPrefix && !slices.Contains(r.Prefixes, name):
			r.Prefixes = append(r.Prefixes, name)
		case kind == kindSchema && !slices.Contains(r.Schemas, name):
			r.Schemas = append(r.Schemas, name)
		case kind == kindOpened:
			open[name]++
		case kind == kindClosed:
			open[name]--
		}
	}
	for _, p := range r.Prefixes {
		if n, ok := open[p]; ok && n <= 0 {
			r.Settled = append(r.Settled, p)
		}
	}
	return r, nil
}

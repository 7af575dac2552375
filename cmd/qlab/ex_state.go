package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuelab/qlab/exercises"
)

// exStateFile is the progress file at the module root (gitignored).
const exStateFile = ".qlab-ex-state"

const exStateHeader = "# DON'T EDIT THIS FILE: qlab ex keeps your progress here. `qlab ex check-all` rebuilds it from your code.\n"

// exState is a student's progress: the current exercise, the ones done,
// and how many hints of each were shown. Exercises are named by directory
// so a renumbering keeps progress.
type exState struct {
	Current string
	Done    []string
	Hints   map[string]int
}

func loadExState(root string) exState {
	st := exState{Hints: map[string]int{}}
	b, err := os.ReadFile(filepath.Join(root, exStateFile))
	if err != nil {
		st.Current = exercises.All[0].Dir
		return st
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "current":
			st.Current = f[1]
		case len(f) == 2 && f[0] == "done":
			st.Done = append(st.Done, f[1])
		case len(f) == 3 && f[0] == "hints":
			st.Hints[f[1]], _ = strconv.Atoi(f[2])
		}
	}
	if _, ok := exByDir(st.Current); !ok {
		st.Current = exercises.All[0].Dir
	}
	return st
}

// updateExState applies change to the progress file as it is now, under
// a lock, and returns the result. Two terminals may run qlab ex at once
// (watch mode in one, qlab ex check in another): each writes only what it
// changed, so neither loses the other's progress.
func updateExState(root string, change func(*exState)) (exState, error) {
	unlock, err := lockExState(root)
	if err != nil {
		return exState{}, err
	}
	defer unlock()
	st := loadExState(root)
	change(&st)
	return st, st.save(root)
}

// exLockStale is how old a lock file may be before it is taken as left
// behind by a killed qlab: a save holds it for a millisecond.
const exLockStale = 5 * time.Second

// lockExState takes the state file's lock: a file created exclusively,
// which works on every OS and file system Go writes to. It waits for
// another qlab to finish until the lock would be stale, and breaks a
// stale lock: a 2 s wait ran out on a loaded machine (load 69) while
// eight savers took turns.
func lockExState(root string) (unlock func(), err error) {
	path := filepath.Join(root, exStateFile+".lock")
	for deadline := time.Now().Add(exLockStale + time.Second); ; {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_ = f.Close()
			return func() { _ = os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if fi, statErr := os.Stat(path); statErr == nil && time.Since(fi.ModTime()) > exLockStale {
			_ = os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s is held by another qlab ex; remove it if none runs", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// save writes st whole; callers go through updateExState.
func (st exState) save(root string) error {
	var b strings.Builder
	b.WriteString(exStateHeader)
	fmt.Fprintf(&b, "current %s\n", st.Current)
	for _, d := range st.Done {
		fmt.Fprintf(&b, "done %s\n", d)
	}
	for _, ex := range exercises.All {
		if n := st.Hints[ex.Dir]; n > 0 {
			fmt.Fprintf(&b, "hints %s %d\n", ex.Dir, n)
		}
	}
	return os.WriteFile(filepath.Join(root, exStateFile), []byte(b.String()), 0o644)
}

func (st exState) done(dir string) bool { return slices.Contains(st.Done, dir) }

// record notes what a run showed: a pass adds the exercise to the done
// list, any other outcome removes it (the code changed since).
func (st *exState) record(r exRun) {
	st.Done = slices.DeleteFunc(st.Done, func(d string) bool { return d == r.Ex.Dir })
	if r.Status == exPass {
		st.Done = append(st.Done, r.Ex.Dir)
	}
}

// next returns the first exercise after the current one not yet done
// (wrapping round), or false when every one is done.
func (st exState) next() (exercises.Exercise, bool) {
	cur, _ := exByDir(st.Current)
	n := len(exercises.All)
	for i := 1; i <= n; i++ {
		ex := exercises.All[(exercises.Index(cur)+i)%n]
		if !st.done(ex.Dir) {
			return ex, true
		}
	}
	return exercises.Exercise{}, false
}

func exByDir(dir string) (exercises.Exercise, bool) {
	for _, ex := range exercises.All {
		if ex.Dir == dir {
			return ex, true
		}
	}
	return exercises.Exercise{}, false
}

package exercises

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The author check: every pristine stub fails its checker and every
// solution passes it (under -race when this test runs under it), in one go
// invocation each. go's -overlay puts the stub or the solution in place of
// the student's file, so the check holds in a student's clone whatever
// they have written.
// Broker exercises skip (and so neither fail nor pass) without a broker,
// unless QLAB_REQUIRE_BROKER=1, where the checker fails instead.
func TestEveryStubFailsEverySolutionPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on every exercise; skipped under -short")
	}
	var pkgs []string
	for _, ex := range All {
		pkgs = append(pkgs, "./"+ex.Dir)
	}
	// Both built alike (raceFlag), so they share one build of the lab's
	// packages, and at once: each go test spends much of its time linking.
	t.Run("solutions pass", func(t *testing.T) {
		t.Parallel()
		got := goTest(t, overlay(t, "solution.go"), pkgs)
		for _, ex := range All {
			assert.Contains(t, []string{"pass", "skip"}, got[ex.Dir], "exercise %s: its solution must pass its checker", ex.Dir)
		}
	})
	t.Run("stubs fail", func(t *testing.T) {
		t.Parallel()
		got := goTest(t, overlay(t, "stub.go"), pkgs)
		for _, ex := range All {
			want := []string{"fail"}
			if ex.Broker {
				want = append(want, "skip") // no broker here: nothing to check against
			}
			assert.Contains(t, want, got[ex.Dir], "exercise %s: its stub must fail its checker", ex.Dir)
		}
	})
}

// overlay writes a go -overlay file that replaces every exercise's
// student file with its testdata/name, and returns its path.
func overlay(t *testing.T, name string) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	replace := map[string]string{}
	for _, ex := range All {
		replace[filepath.Join(wd, ex.Dir, ex.File)] = filepath.Join(wd, ex.Dir, "testdata", name)
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "overlay.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// goTest runs go test -json (with raceFlag) with args in this directory and returns each
// exercise directory's outcome: pass, fail or skip (every test skipped).
func goTest(t *testing.T, overlay string, args []string) map[string]string {
	t.Helper()
	flags := append([]string{"test", "-json", "-count=1", "-tags", "qlabex", "-overlay", overlay}, raceFlag...)
	cmd := exec.Command("go", append(flags, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // a failing package is what half of this test expects
	got := map[string]string{}
	skipped := map[string]bool{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var ev struct{ Action, Package, Test string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Package == "" {
			continue
		}
		dir := filepath.Base(ev.Package)
		switch {
		case ev.Test != "" && ev.Action == "skip":
			skipped[dir] = true
		case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail"):
			got[dir] = ev.Action
		}
	}
	for dir := range skipped {
		if got[dir] == "pass" {
			got[dir] = "skip"
		}
	}
	require.NotEmpty(t, got, "go test printed no results:\n%s", out.String())
	return got
}

// Every exercise in the list has its directory, numbered in order, with
// a stub and a solution of the right build tags and a checker.
func TestListMatchesTheDirectories(t *testing.T) {
	dirs, err := filepath.Glob("[0-9][0-9]_*")
	require.NoError(t, err)
	require.Len(t, All, len(dirs), "every exercise directory is in All, and only those")
	numbered := regexp.MustCompile(`^\d\d_[a-z0-9_]+$`)
	for i, ex := range All {
		assert.Regexp(t, numbered, ex.Dir)
		assert.Equal(t, i+1, ex.Number(), "exercises are numbered 01, 02 … in order")
		assert.True(t, strings.HasPrefix(string(ex.Stub()), "//go:build qlabex\n"), ex.Path())
		assert.True(t, strings.HasPrefix(string(ex.Solution()), "//go:build qlabex\n"), ex.Dir)
		assert.Contains(t, string(ex.Stub()), "// TODO", "%s: the stub marks what to write", ex.Path())
		assert.FileExists(t, filepath.Join(ex.Dir, "check_test.go"))
		assert.FileExists(t, filepath.Join(ex.Dir, "doc.go"))
		assert.GreaterOrEqual(t, len(ex.Hints), 3, "%s: several hints, read one at a time", ex.Dir)
		for _, h := range ex.Hints {
			assert.NotEmpty(t, h.Text, ex.Dir)
		}
	}
}

// A fresh clone starts from the pristine stubs: the file committed at
// HEAD is testdata/stub.go (checked where git is; a student who commits
// their work sees this fail and can ignore it).
func TestCommittedFilesAreTheStubs(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	for _, ex := range All {
		out, err := exec.Command("git", "show", "HEAD:./"+ex.Dir+"/"+ex.File).Output()
		if err != nil {
			t.Skipf("%s is not committed yet (or this is no git checkout)", ex.Path())
		}
		assert.Equal(t, string(ex.Stub()), string(out), "%s at HEAD differs from its testdata/stub.go", ex.Path())
	}
}

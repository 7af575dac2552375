package exercises

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/exercises/check"
)

// only narrows the author check to some exercises, by number or
// directory: go test ./exercises -run Author -only 3,05_backoff
var only = flag.String("only", "", "author check: only these exercises (comma-separated numbers or directories)")

// chosen is the exercises the author check runs on.
func chosen(t *testing.T) []Exercise {
	if *only == "" {
		return All
	}
	var out []Exercise
	for _, ex := range All {
		for _, w := range strings.Split(*only, ",") {
			if n, err := strconv.Atoi(w); (err == nil && n == ex.Number()) || w == ex.Dir {
				out = append(out, ex)
			}
		}
	}
	require.NotEmpty(t, out, "-only %q names no exercise", *only)
	return out
}

// The author check: every pristine stub fails its checker, every solution
// passes it (under -race when this test runs under it, and go vet), and
// every known-wrong solution (testdata/wrong/*.go) fails with the check
// its header names first, built as qlab check builds a student's file
// (studentFlags). go's -overlay puts each file beside its exercise's own
// files, so the check holds in a student's clone whatever they have
// written. Broker exercises skip (and so neither fail nor pass) without a
// broker, unless QLAB_REQUIRE_BROKER=1, where the checker fails instead.
//
// A test binary's link is most of what a variant costs (about a second of
// CPU, more under -race; measured), so the variants are linked into two
// binaries (variantBinary), and each runs in a process of its own, chosen
// by -test.run, all at once.
func TestAuthorCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on every exercise; skipped under -short")
	}
	exs := chosen(t)
	// The solutions are held to the strictest build: -race, and go vet
	// with every analyzer (go test vets with a few); the stubs and wrong
	// solutions share the student's, whose link is cheaper (no race
	// runtime, no symbols) and whose first failure is the one a student
	// reads.
	t.Run("solutions pass", func(t *testing.T) {
		t.Parallel()
		vetSolutions(t, exs)
		checkAll(t, solutions(t, exs), append([]string{"-vet=off"}, raceFlag...))
	})
	vs := studentVariants(t, exs)
	t.Run("stubs and wrong solutions", func(t *testing.T) {
		t.Parallel()
		checkAll(t, vs, studentFlags)
	})
}

// checkAll links vs into one binary with the build flags and checks each
// variant in a parallel subtest of its own.
func checkAll(t *testing.T, vs []variant, build []string) {
	bin := variantBinary(t, vs, build)
	for _, v := range vs {
		t.Run(v.ex.Dir+"/"+v.file, func(t *testing.T) {
			t.Parallel()
			v.check(t, bin)
		})
	}
}

// variant is one file of an exercise's testdata/ in the student's place:
// its solution (pass: it must pass), its stub (first nil: it must fail)
// or a wrong solution, which must fail with one of first.
type variant struct {
	ex    Exercise
	file  string
	pass  bool
	first []string
	tests []string // the checker's test functions
	index int      // its place in the variant binary
}

// check runs v's checker from bin, the variant binary, and holds its
// outcome to what v must come to.
func (v variant) check(t *testing.T, bin string) {
	got := runVariant(t, bin, v)
	if v.pass {
		assert.Contains(t, []string{"pass", "skip"}, got.action,
			"exercise %s: its solution must pass its checker (first failure: %s)", v.ex.Dir, got.first)
		return
	}
	if v.first == nil {
		want := []string{"fail"}
		if v.ex.Broker {
			want = append(want, "skip") // no broker here: nothing to check against
		}
		assert.Contains(t, want, got.action, "exercise %s: its stub must fail its checker", v.ex.Dir)
		return
	}
	if got.action == "skip" && v.ex.Broker {
		return
	}
	assert.Contains(t, v.first, got.first, "exercise %s: %s must fail with its first message", v.ex.Dir, v.file)
}

// firstFailure is the header line of a wrong solution naming the first
// failing check (or "deadlock", "timeout", "panic").
var firstFailure = regexp.MustCompile(`(?m)^// First failure: (.+)$`)

// orFirst names another check that may fail first, where the broker's
// timing decides (a fire-and-forget publisher can lose messages, or
// not, before its refusal is checked).
var orFirst = regexp.MustCompile(`(?m)^// Or first, if slow: (.+)$`)

// solutions are every exercise's solution, as variants.
func solutions(t *testing.T, exs []Exercise) []variant {
	var out []variant
	for i, ex := range exs {
		out = append(out, variant{ex: ex, file: "solution.go", pass: true, tests: checkerTests(t, ex), index: i})
	}
	return out
}

// vetSolutions runs go vet on every exercise with its solution in the
// student's file, and fails t with what it says.
func vetSolutions(t *testing.T, exs []Exercise) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	replace := map[string]string{}
	args := []string{"vet", "-tags", "qlabex", "-overlay", ""}
	for _, ex := range exs {
		replace[filepath.Join(wd, ex.Dir, ex.File)] = filepath.Join(wd, ex.Dir, "testdata", "solution.go")
		args = append(args, "./"+ex.Dir)
	}
	args[4] = writeOverlay(t, replace)
	out, err := exec.Command("go", args...).CombinedOutput()
	assert.NoError(t, err, "go vet on the solutions:\n%s", out)
}

// writeOverlay writes a go -overlay file of replace (the file go reads,
// by the file it stands for) and returns its path.
func writeOverlay(t *testing.T, replace map[string]string) string {
	b, err := json.Marshal(map[string]any{"Replace": replace})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "overlay.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// studentVariants are every exercise's stub and its known-wrong solutions
// (testdata/wrong/*.go): at least two each, each with its First failure
// line.
func studentVariants(t *testing.T, exs []Exercise) []variant {
	var out []variant
	for _, ex := range exs {
		tests := checkerTests(t, ex)
		out = append(out, variant{ex: ex, file: "stub.go", tests: tests, index: len(out)})
		files, err := filepath.Glob(filepath.Join(ex.Dir, "testdata", "wrong", "*.go"))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, len(files), 2, "%s: at least two known-wrong solutions in testdata/wrong/", ex.Dir)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			m := firstFailure.FindSubmatch(b)
			if !assert.NotNil(t, m, "%s: a header line \"// First failure: <check>\"", f) {
				continue
			}
			first := []string{strings.TrimSpace(string(m[1]))}
			for _, or := range orFirst.FindAllSubmatch(b, -1) {
				first = append(first, strings.TrimSpace(string(or[1])))
			}
			rel, _ := filepath.Rel(filepath.Join(ex.Dir, "testdata"), f)
			out = append(out, variant{ex: ex, file: rel, first: first, tests: tests, index: len(out)})
		}
	}
	return out
}

// checkerTests names the test functions of ex's checker: every
// func TestX(*testing.T) of its _test.go files, all in ex's own package.
func checkerTests(t *testing.T, ex Exercise) []string {
	files, err := filepath.Glob(filepath.Join(ex.Dir, "*_test.go"))
	require.NoError(t, err)
	var tests []string
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		require.False(t, strings.HasSuffix(file.Name.Name, "_test"),
			"%s: the author check links a checker into one binary: in the exercise's package, not %s", f, file.Name.Name)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests = append(tests, fn.Name.Name)
			}
		}
	}
	require.NotEmpty(t, tests, "%s: a checker has a test", ex.Dir)
	return tests
}

// variantsDir is where, in the overlay only, variantBinary puts the test
// package that links every variant and, under it, the variants: testdata
// keeps go's ./... patterns away, and nothing is written there.
const variantsDir = "testdata/authorcheck"

// variantBinary links every variant into one test binary with the build
// flags (studentFlags: as qlab check builds a student's exercise). Variant i is a copy of
// its exercise's package in variantsDir/vNNN, in the overlay only: the
// exercise's files with the variant in the student file's place, and the
// checker's _test.go files as files of the package (TestX stays exported).
// The binary's TestVNNN_X runs variant NNN's TestX: variantName.
func variantBinary(t *testing.T, vs []variant, build []string) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	base := reflect.TypeFor[Exercise]().PkgPath() + "/" + variantsDir
	replace := map[string]string{}
	var imports, tests strings.Builder
	for _, v := range vs {
		i := v.index
		dir := filepath.Join(wd, variantsDir, fmt.Sprintf("v%03d", i))
		files, err := filepath.Glob(filepath.Join(wd, v.ex.Dir, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			name := filepath.Base(f)
			if name == v.ex.File {
				f = filepath.Join(wd, v.ex.Dir, "testdata", v.file)
			}
			// check_test.go becomes check_test_.go: a file of the package.
			replace[filepath.Join(dir, strings.TrimSuffix(name, ".go")+"_.go")] = f
		}
		fmt.Fprintf(&imports, "\tv%03d %q\n", i, fmt.Sprintf("%s/v%03d", base, i))
		for _, test := range v.tests {
			fmt.Fprintf(&tests, "func %s(t *testing.T) { v%03d.%s(t) }\n", variantName(i, test), i, test)
		}
	}
	tmp := t.TempDir()
	main := filepath.Join(tmp, "variants_test.go")
	src := "//go:build qlabex\n\npackage authorcheck\n\nimport (\n\t\"testing\"\n\n" + imports.String() + ")\n\n" + tests.String()
	require.NoError(t, os.WriteFile(main, []byte(src), 0o644))
	replace[filepath.Join(wd, variantsDir, "variants_test.go")] = main
	bin := filepath.Join(tmp, "variants.test")
	args := append([]string{"test", "-c", "-o", bin, "-tags", "qlabex", "-overlay", writeOverlay(t, replace)}, build...)
	cmd := exec.Command("go", append(args, "./"+variantsDir)...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "every variant must compile:\n%s", out)
	t.Logf("%d variants linked into one binary in %.1fs (%.1fs of CPU)", len(vs),
		time.Since(start).Seconds(), (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
	return bin
}

// variantName is the variant binary's test that runs variant i's test.
func variantName(i int, test string) string { return fmt.Sprintf("TestV%03d_%s", i, test) }

// runVariant runs v's checker from bin in v's exercise directory, as go
// test runs a test binary (-timeout 2m as goTest), and returns its outcome:
// skip where it passed with a test skipped.
func runVariant(t *testing.T, bin string, v variant) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // the binary's own alarm is at 2
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^"+variantName(v.index, ""), "-test.v",
		"-test.count=1", "-test.timeout=2m", "-test.paniconexit0")
	cmd.Dir = v.ex.Dir
	out, err := cmd.CombinedOutput()
	got := outcome{action: "pass", first: firstMessage(string(out))}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		got.action = "fail"
	case err != nil:
		require.NoError(t, err, "running %s", bin)
	case strings.Contains(string(out), "--- SKIP: "):
		got.action = "skip"
	}
	require.Contains(t, string(out), "=== RUN   "+variantName(v.index, v.tests[0]), "the variant's checker ran:\n%s", out)
	return got
}

// outcome is what one exercise's checker came to: its action (pass, fail
// or skip: every test skipped) and its first message: the first failed
// check, else what ended it (deadlock, timeout, panic).
type outcome struct{ action, first string }

// studentFlags build a checker as qlab check does (cmd/qlab's
// runExercise): no vet, no symbol table, no race detector.
var studentFlags = []string{"-vet=off", "-ldflags=-s -w"}

// firstMessage is the first line a student reads of a failed check.
func firstMessage(out string) string {
	results, rest := check.Parse(out)
	for _, r := range results {
		if !r.Pass && r.Skip == "" {
			return r.Check
		}
	}
	switch {
	case strings.Contains(rest, "panic: test timed out"):
		return "timeout"
	case strings.Contains(rest, "deadlock"):
		return "deadlock"
	case strings.Contains(rest, "panic:"):
		return "panic"
	}
	return ""
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
		if i == 0 {
			assert.Equal(t, 1, ex.Number(), "exercises are numbered from 01")
		} else {
			// A number may be kept for an exercise still to come.
			assert.Greater(t, ex.Number(), All[i-1].Number(), "exercises are numbered in increasing order")
		}
		found, err := Find(ex.Number())
		assert.NoError(t, err)
		assert.Equal(t, ex.Dir, found.Dir, "Find(%d)", ex.Number())
		assert.True(t, strings.HasPrefix(string(ex.Stub()), "//go:build qlabex\n"), ex.Path())
		assert.True(t, strings.HasPrefix(string(ex.Solution()), "//go:build qlabex\n"), ex.Dir)
		assert.Contains(t, string(ex.Stub()), "// TODO", "%s: the stub marks what to write", ex.Path())
		assert.Contains(t, strings.SplitN(string(ex.Stub()), "\n", 4)[2], `"buildFlags": ["-tags=qlabex"]`,
			"%s: the header says how to set an editor up for the build tag", ex.Path())
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

// No hint hands out the answer: none contains a whole line of the
// solution's code (a statement of 30 characters or more, spaces aside).
func TestNoHintIsASolutionLine(t *testing.T) {
	squeeze := strings.NewReplacer(" ", "", "\t", "", "\\", "")
	for _, ex := range All {
		for _, line := range strings.Split(string(ex.Solution()), "\n") {
			code, _, _ := strings.Cut(line, "//")
			code = squeeze.Replace(code)
			if len(code) < 30 {
				continue
			}
			for i, h := range ex.Hints {
				assert.NotContains(t, squeeze.Replace(h.Text), code, "%s: hint %d of %d is the solution's line %q", ex.Dir, i+1, len(ex.Hints), strings.TrimSpace(line))
			}
		}
	}
}

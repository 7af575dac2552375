package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/class"
	"github.com/queuelab/qlab/exercises"
	"github.com/queuelab/qlab/exercises/check"
)

// startClass runs `qlab class serve` on a free loopback port and returns
// its URL, its terminal output, and stop (Ctrl-C, then the exit code).
func startClass(t *testing.T) (url string, stdout *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- Main(ctx, []string{"class", "serve", "--addr", "127.0.0.1:0"}, stdout, stderr) }()
	at := regexp.MustCompile(`the room is at (http://127\.0\.0\.1:\d+)/`)
	require.Eventually(t, func() bool { return at.MatchString(stderr.String()) },
		10*time.Second, 10*time.Millisecond, "no banner: %s", stderr.String())
	stop = func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("class serve did not stop within 10 s of Ctrl-C")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	return at.FindStringSubmatch(stderr.String())[1], stdout, stop
}

// join makes this process student name of the class at url, as
// `qlab class join` does, with a config directory of its own.
func join(t *testing.T, url, name string) {
	t.Helper()
	t.Setenv("QLAB_CONFIG_DIR", t.TempDir())
	code, out, errOut := qlab("class", "join", url, "--name", name)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "Joined "+url)
}

func progress(t *testing.T, url string) class.Progress {
	t.Helper()
	resp, err := http.Get(url + "/api/progress")
	require.NoError(t, err)
	defer resp.Body.Close()
	var p class.Progress
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	return p
}

// TestClassWithThreeStudents: three students join on loopback; one runs
// lesson 1 for real, the others' exercise verdicts arrive as qlab ex sends
// them; the terminal, /api/progress and the page in a real browser show
// all three.
func TestClassWithThreeStudents(t *testing.T) {
	url, screen, stop := startClass(t)

	join(t, url, "Ada Lovelace")
	code, _, errOut := qlab("run", "1", "--speed", "100")
	require.Equal(t, exitOK, code, errOut)

	ex := exercises.All[4]
	join(t, url, "Grace")
	reportExercise(context.Background(), exRun{Ex: ex, Status: exPass}, os.Stderr)

	join(t, url, "Linus")
	failing := exRun{Ex: ex, Status: exFail, Results: []check.Result{
		{Check: "C retries after 1s", Pass: true},
		{Check: "C waits 2s before its second retry", Got: "1s"},
	}}
	reportExercise(context.Background(), failing, os.Stderr)
	reportExercise(context.Background(), exRun{Ex: exercises.All[0], Status: exBuild, Output: "q01.go:3: password := \"hunter2\""}, os.Stderr)

	p := progress(t, url)
	require.Len(t, p.Students, 3)
	byName := map[string]class.StudentProgress{}
	for _, s := range p.Students {
		byName[s.Name] = s
	}
	assert.Equal(t, class.Done, byName["Ada Lovelace"].Cells["Q01"].Status, "a lesson that ran to its end")
	assert.Equal(t, class.Done, byName["Grace"].Cells[exItem(ex)].Status)
	assert.Equal(t, "✗ C waits 2s before its second retry", byName["Linus"].Cells[exItem(ex)].Detail)
	assert.Equal(t, "it does not compile", byName["Linus"].Cells["E01"].Detail, "no line of the student's code leaves")

	require.Eventually(t, func() bool {
		s := screen.String()
		return strings.Contains(s, "Ada Lovelace") && strings.Contains(s, "Grace") && strings.Contains(s, "E01: it does not compile")
	}, 5*time.Second, 10*time.Millisecond, "the terminal view: %s", screen.String())

	dom := browse(t, url+"/")
	for _, want := range []string{`data-student="Ada Lovelace"`, `data-student="Grace"`, `data-student="Linus"`, "3 students", "E01: it does not compile"} {
		assert.Contains(t, dom, want)
	}
	assert.Equal(t, exitOK, stop())
}

// TestClassInputIsChecked: a non-loopback address needs --public, a join
// needs a class URL and a name, and a server that does not answer is one
// line, not a hang.
func TestClassInputIsChecked(t *testing.T) {
	t.Setenv("QLAB_CONFIG_DIR", t.TempDir())
	for _, args := range [][]string{
		{"class"},
		{"class", "serve", "--addr", "0.0.0.0:0"},
		{"class", "serve", "--max-students", "0"},
		{"class", "join", "http://127.0.0.1:1"},
		{"class", "join", "ftp://x", "--name", "a"},
		{"class", "join", "http://u:pw@127.0.0.1:1", "--name", "a"},
		{"class", "join", "http://127.0.0.1:1", "--name", "a\x1bb"},
		{"class", "dance"},
	} {
		code, _, errOut := qlab(args...)
		assert.Equal(t, exitUsage, code, "%q: %s", args, errOut)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "%q: one line: %q", args, errOut)
		assert.NotContains(t, errOut, "pw@")
	}
	start := time.Now()
	code, _, errOut := qlab("class", "join", "http://127.0.0.1:1", "--name", "ana")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no class server answered")
	assert.Less(t, time.Since(start), class.SendTimeout+5*time.Second, "bounded")
	code, out, _ := qlab("class", "status")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Not in a class", "a failed join remembers nothing")
}

// TestCheckAllNamesEveryLine: without $USER and $USERNAME the JSON lines
// carry the name given to qlab class join, else "unknown" with a warning.
func TestCheckAllNamesEveryLine(t *testing.T) {
	t.Setenv("QLAB_CONFIG_DIR", t.TempDir())
	t.Setenv("USER", "")
	t.Setenv("USERNAME", "")
	exName = ""
	var warn strings.Builder
	assert.Equal(t, "unknown", exStudentName(nil, &warn))
	assert.Contains(t, warn.String(), "--name NAME")
	require.NoError(t, class.Member{Name: "Ada"}.Save())
	warn.Reset()
	assert.Equal(t, "Ada", exStudentName(nil, &warn))
	assert.Empty(t, warn.String())
	t.Setenv("USERNAME", "win-ada")
	assert.Equal(t, "win-ada", exStudentName(nil, &warn), "Windows sets USERNAME")
}

// browse returns the DOM of url after its scripts ran, as headless
// Chromium renders it. Without Chromium the test skips, unless
// QLAB_REQUIRE_CHROMIUM=1 (CI installs it).
func browse(t *testing.T, url string) string {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("QLAB_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("QLAB_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)")
		}
		t.Skip("no chromium on PATH: the page is not read in a browser here (apt-get install chromium)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000",
		"--dump-dom", url).Output()
	require.NoError(t, err, "chromium")
	return string(out)
}

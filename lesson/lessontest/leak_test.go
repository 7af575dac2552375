package lessontest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestNoGoroutineOutlivesSeesALeak: a goroutine started by a goroutine of
// the run, still blocked after the bound, is reported; one that ends in
// time, and goroutines of others, are not.
func TestNoGoroutineOutlivesSeesALeak(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	unrelated := make(chan struct{})
	defer close(unrelated)
	go func() { <-unrelated }() // someone else's: never reported

	var rec fakeT
	outlives(&rec, 300*time.Millisecond, func() {
		go func() { time.Sleep(50 * time.Millisecond) }() // ends in time
		go func() { go func() { <-stop }() }()            // leaks, one level down
	})
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "leak_test.go") {
		t.Fatalf("want one report naming the leaking goroutine, got %q", rec.errors)
	}

	var clean fakeT
	outlives(&clean, 300*time.Millisecond, func() { go func() { time.Sleep(10 * time.Millisecond) }() })
	if len(clean.errors) != 0 {
		t.Fatalf("a run whose goroutines ended was reported: %q", clean.errors)
	}
}

// fakeT records Errorf instead of failing.
type fakeT struct {
	testing.TB
	errors []string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

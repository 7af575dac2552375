//go:build qlabex

package backoff

import (
	"fmt"
	"testing"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/lab"
)

const maxAttempts = 4

func TestBackoff(t *testing.T) {
	c := check.New(t)
	for n, want := range map[int]int64{1: 1000, 2: 2000, 3: 4000, 5: 16000} {
		c.Expect(check.Run{Name: "Backoff alone"}, "Backoff doubles: 1 s, 2 s, 4 s …",
			fmt.Sprintf("Backoff(%d) = %v", n, Backoff(n)), fmt.Sprintf("Backoff(%d) = %v", n, fmt.Sprint(want/1000)+"s"), "")
	}
	for _, plan := range check.Plans() {
		r := check.RetryLoop(t, plan, maxAttempts, RetryAfter)
		c.Accounted(r, lab.FateDone, lab.FateDropped)
		c.Waits(r, maxAttempts, func(n int) int64 { return int64(1000) << (n - 1) })
	}
}

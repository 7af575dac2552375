package check

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
)

// A run stuck where lesson time cannot move on (a goroutine sleeping
// while it holds a lock another waits for) is reported as StalledCheck
// within a few seconds, not at go test's -timeout. The stuck run is in a
// child process: the watchdog ends the process it is in.
func TestAStuckRunFailsFast(t *testing.T) {
	if os.Getenv("QLAB_STALL_CHILD") == "1" {
		New(t)
		InMem(t, Plans()[0], func(ctx context.Context, s *lab.Stream) error {
			var mu sync.Mutex
			s.Emit(lab.Event{Kind: lab.Started, Task: "A"})
			mu.Lock()
			go func() { mu.Lock(); mu.Unlock() }() // blocked on the lock: not durably, so time cannot jump
			time.Sleep(time.Second)
			mu.Unlock()
			return nil
		})
		return
	}
	start := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAStuckRunFailsFast$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "QLAB_STALL_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the stuck run fails:\n%s", out)
	assert.Less(t, time.Since(start), Stall+10*time.Second, "reported by the watchdog, not the -timeout")
	results, _ := Parse(string(out))
	require.NotEmpty(t, results, "%s", out)
	last := results[len(results)-1]
	assert.Equal(t, StalledCheck, last.Check)
	assert.False(t, last.Pass)
	assert.Contains(t, last.Got, "lesson time stood still at 00:00.000")
}

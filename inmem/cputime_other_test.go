//go:build !unix

package inmem

import "time"

// cpuTime is 0 where the benchmarks do not read the process's CPU time:
// they report no cpu-ns/op there.
func cpuTime() time.Duration { return 0 }

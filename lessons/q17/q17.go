// Package q17 is lesson Q17 — confirms and prefetch, measured.
//
// Notice: the notification service (seed 002) waits for a confirm after
// every message. A window of outstanding confirms publishes many times
// faster and still tells the publisher exactly which messages it may have
// to send again; without confirms the publisher cannot tell what a crash
// took. A confirm is not a delivery: a job published before anyone
// declared email-queue is confirmed and gone, unless mandatory brings it
// back. Prefetch decides who holds what: with unlimited prefetch a slow
// worker sits on half the jobs. And seed 003's "~200 msgs/min at prefetch
// 5 and 500 ms" is neither what one serial handler does (120) nor five
// concurrent ones (600): prefetch does not make a handler concurrent.
//
// Why so long: four measurements (confirm windows with a cut connection,
// mandatory, prefetch between a slow and a fast worker, the birthday
// scheduler's throughput), each a run of its own in confirms.go and
// prefetch.go.
package q17

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

// The lesson's sizes. Publishing is measured in real msg/s on real
// messages; the workers' handlers take lesson time (--speed scales them).
const (
	confirmMessages = 400                    // per confirm strategy and run
	prefetchJobs    = 30                     // jobs for the slow and the fast worker
	slowWork        = 200 * time.Millisecond // the slow worker's handler (a slow SMTP server)
	fastWork        = 50 * time.Millisecond  // the fast worker's
	seedJobs        = 10                     // jobs for seed 003's worker
	seedWork        = 500 * time.Millisecond // seed 003: "500ms processing"
	seedPrefetch    = 5                      // seed 003: "Prefetch: 5"
	seedClaim       = 200                    // seed 003: "~200 msgs/min"
)

// prefetchSettings are the settings the slow and fast workers share in
// each run: the seed's 1, 10, and unlimited.
var prefetchSettings = []int{1, 10, 0}

// Lesson is Q17, on the broker only (see its Notice for why).
var Lesson = lesson.Lesson{
	ID:         "Q17",
	WatchSpeed: 1, // its waits are short already; 0.25x would quadruple the workers' part
	Title:      "Confirms and prefetch, measured",
	Notice: "Four measurements only a broker can make: confirms after every message against a window " +
		"of them (msg/s, and what a cut connection leaves unknown), a job nobody routes confirmed " +
		"and gone unless mandatory returns it, and a slow worker sitting on half the jobs at " +
		"unlimited prefetch. The fourth is seed 003's ~200 msgs/min at prefetch 5 and 500 ms: one " +
		"amqp091-go delivery loop runs 120/min, a goroutine per delivery up to 600/min. Prefetch " +
		"does not make a handler concurrent.",
	Rabbit:     runQ17,
	Default:    lab.Rabbit,
	TestSpeed:  5, // the slow worker's 200 ms take 40 ms
	Topologies: notify.Topologies,
	// Not in the fault suite: the lesson measures rates and cuts its own
	// publisher's connection; a fault from outside would measure the fault.
}

// runQ17 runs the four parts on one session and reports their tables.
func runQ17(ctx context.Context, env *lesson.Env) error {
	s, err := rabbitenv.Session(ctx, env)
	if err != nil {
		return err
	}
	defer rabbitenv.CloseSession(ctx, env, s)
	version, _ := s.Connection().Properties["version"].(string)

	env.Phase("Before the worker declared email-queue: the API publishes a job")
	early, err := publishUndeclared(ctx, s)
	if err != nil {
		return err
	}
	if err := s.Topo().Declare(ctx, rabbit.Topology{Queues: []rabbit.Queue{{Name: notify.EmailQueue, Role: rabbit.Work}}}); err != nil {
		return err
	}

	env.Phase(fmt.Sprintf("Publishing %d jobs per strategy, then again with the connection cut", confirmMessages))
	cutAt := cutPoint(env.Plan.Seed, confirmMessages)
	rows, err := measureConfirms(ctx, s, confirmMessages, cutAt, func(line string) { env.Log().Info(line) })
	if err != nil {
		return err
	}
	env.Report(confirmTable(version, rows, confirmMessages, cutAt))
	env.Report(unroutableTable(version, early))

	var prefetchRuns []jobRun
	for _, p := range prefetchSettings {
		env.Phase(fmt.Sprintf("A slow and a fast worker, both at prefetch %s", prefetchName(p)))
		run, err := runJobs(ctx, env, s, fmt.Sprintf("p%d-", p), prefetchJobs,
			&worker{name: "Slow-Worker", prefetch: p, work: slowWork, concurrency: 1},
			&worker{name: "Fast-Worker", prefetch: p, work: fastWork, concurrency: 1})
		if err != nil {
			return err
		}
		prefetchRuns = append(prefetchRuns, run)
	}
	env.Report(prefetchTable(version, prefetchRuns))

	var seedRuns []jobRun
	for _, c := range []int{1, seedPrefetch} {
		env.Phase(fmt.Sprintf("The birthday scheduler's worker: prefetch %d, %v a job, %d handler(s) at once", seedPrefetch, seedWork, c))
		run, err := runJobs(ctx, env, s, fmt.Sprintf("s%d-", c), seedJobs,
			&worker{name: fmt.Sprintf("Birthday-Worker-%d", c), prefetch: seedPrefetch, work: seedWork, concurrency: c})
		if err != nil {
			return err
		}
		seedRuns = append(seedRuns, run)
	}
	env.Report(seedTable(version, seedRuns))
	return nil
}

// prefetchName is how a prefetch setting reads: 0 is unlimited.
func prefetchName(p int) string {
	if p == 0 {
		return "unlimited (0)"
	}
	return fmt.Sprint(p)
}

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

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
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
	_, err := measure(ctx, env)
	return err
}

// measured is what a run of the lesson measured, beyond its tables: the
// package's tests hold the parts to their claims on one run of the
// lesson rather than a run of each part of their own.
type measured struct {
	cutAt    int // the confirm runs' cut: after this message
	confirms []confirmRow
	prefetch []jobRun // one per prefetchSettings
	seed     []jobRun // one delivery loop, then seedPrefetch handlers
}

// measure runs the four parts on one session, reports their tables and
// returns what they measured.
func measure(ctx context.Context, env *lesson.Env) (measured, error) {
	var m measured
	s, err := rabbitenv.Session(ctx, env)
	if err != nil {
		return m, err
	}
	defer rabbitenv.CloseSession(ctx, env, s)
	version, _ := s.Connection().Properties["version"].(string)

	env.Phase("Before the worker declared email-queue: the API publishes a job")
	early, err := publishUndeclared(ctx, s)
	if err != nil {
		return m, err
	}
	if err := s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: notify.EmailQueue, Role: flow.Work}}}); err != nil {
		return m, err
	}

	z := confirmSizes(env.Brief)
	env.Phase(fmt.Sprintf("Publishing %d jobs per strategy, then again with the connection cut", z.messages))
	m.cutAt = cutPoint(env.Plan.Seed, z.messages)
	if m.confirms, err = measureConfirms(ctx, s, z, m.cutAt, func(line string) { env.Log().Info(line) }); err != nil {
		return m, err
	}
	env.Report(confirmTable(version, m.confirms, z, m.cutAt))
	env.Report(unroutableTable(version, early))

	for _, p := range prefetchSettings {
		env.Phase(fmt.Sprintf("A slow and a fast worker, both at prefetch %s", prefetchName(p)))
		run, err := runJobs(ctx, env, s, fmt.Sprintf("p%d-", p), prefetchJobs,
			&worker{name: "Slow-Worker", prefetch: p, work: slowWork, concurrency: 1},
			&worker{name: "Fast-Worker", prefetch: p, work: fastWork, concurrency: 1})
		if err != nil {
			return m, err
		}
		m.prefetch = append(m.prefetch, run)
	}
	env.Report(prefetchTable(version, m.prefetch))

	for _, c := range []int{1, seedPrefetch} {
		env.Phase(fmt.Sprintf("The birthday scheduler's worker: prefetch %d, %v a job, %d handler(s) at once", seedPrefetch, seedWork, c))
		run, err := runJobs(ctx, env, s, fmt.Sprintf("s%d-", c), seedJobs,
			&worker{name: fmt.Sprintf("Birthday-Worker-%d", c), prefetch: seedPrefetch, work: seedWork, concurrency: c})
		if err != nil {
			return m, err
		}
		m.seed = append(m.seed, run)
	}
	env.Report(seedTable(version, m.seed))
	return m, nil
}

// prefetchName is how a prefetch setting reads: 0 is unlimited.
func prefetchName(p int) string {
	if p == 0 {
		return "unlimited (0)"
	}
	return fmt.Sprint(p)
}

package lab

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// ErrPoison is the failure of a poison task: it fails on every attempt.
var ErrPoison = errors.New("poison task: fails on every attempt")

// ErrTransient is a seeded random failure that a retry may get past.
var ErrTransient = errors.New("transient failure")

// Plan is a lesson's workload and failure plan: which tasks exist, how
// long one attempt takes, and which attempts fail. It is a pure function of
// its fields, so the same Plan fails the same attempts on every backend and
// at every speed.
type Plan struct {
	Tasks    []string      // task ids in the order the producer enqueues them
	Poison   []string      // tasks that fail every attempt
	Work     time.Duration // lesson time one attempt takes
	FailRate float64       // chance in [0,1] that any other attempt fails transiently
	Seed     int64         // picks which attempts FailRate hits (and Jitter's spread)
	// Jitter spreads attempt durations over Work ± Jitter (see WorkTime).
	// Zero, the default, makes every attempt take exactly Work.
	Jitter time.Duration
	// Every is the lesson time between two arrivals: the producer enqueues
	// the first task at once and each next one Every later. Zero, the
	// default, enqueues them all at once. Only lessons that declare
	// Lesson.Scales honour it.
	Every time.Duration

	// poison indexes Poison for ScaledPlan's thousands of poison tasks
	// (a scan per attempt made a 100,000-task run quadratic). It answers
	// only while Poison is still the slice it indexed.
	poison *poisonSet
}

// poisonSet marks a Poison slice that is sorted, and the slice it was
// checked on: isPoison then searches it instead of scanning it.
type poisonSet struct {
	of []string
}

// isPoison reports whether task is in p.Poison.
func (p Plan) isPoison(task string) bool {
	if s := p.poison; s != nil && len(s.of) == len(p.Poison) && len(s.of) > 0 && &s.of[0] == &p.Poison[0] {
		_, ok := slices.BinarySearch(p.Poison, task)
		return ok
	}
	return slices.Contains(p.Poison, task)
}

// MaxTasks bounds ScaledPlan: 100,000 tasks is already minutes of a
// workshop's machine; more is a typo.
const MaxTasks = 100_000

// ScaledPlan is the default scenario grown to n tasks: ids t00001,
// t00002 …, every fourth one poison (as C is of A, B, C, D), 100 ms each.
// n must be in [1, MaxTasks].
func ScaledPlan(n int) (Plan, error) {
	if n < 1 || n > MaxTasks {
		return Plan{}, fmt.Errorf("a plan has 1 to %d tasks, not %d", MaxTasks, n)
	}
	p := DefaultPlan()
	p.Tasks, p.Poison = make([]string, n), make([]string, 0, n/4+1)
	// Every id is a piece of one string: a 100,000-task plan is one
	// allocation of its digits, not 100,000 small ones.
	width := len(strconv.Itoa(n))
	all := make([]byte, 0, n*(1+width))
	for i := range n {
		all = append(all, 't')
		d := strconv.Itoa(i + 1)
		for range width - len(d) {
			all = append(all, '0')
		}
		all = append(all, d...)
	}
	ids := string(all)
	for i := range p.Tasks {
		p.Tasks[i] = ids[i*(1+width) : (i+1)*(1+width)]
		if i%4 == 2 {
			p.Poison = append(p.Poison, p.Tasks[i])
		}
	}
	// Zero-padded ids of one width sort as their numbers do, so the
	// poison ids are sorted already: a search needs no set of its own.
	p.poison = &poisonSet{of: p.Poison}
	return p, nil
}

// DefaultPlan is the seed's scenario: tasks A, B, C, D, 100 ms each, and C
// is poison.
func DefaultPlan() Plan {
	return Plan{Tasks: []string{"A", "B", "C", "D"}, Poison: []string{"C"}, Work: 100 * time.Millisecond}
}

// Fails reports the error attempt number attempt (1-based) of task meets,
// or nil if it succeeds. Poison tasks always fail; others fail when a hash
// of (Seed, task, attempt) falls under FailRate.
func (p Plan) Fails(task string, attempt int) error {
	if p.isPoison(task) {
		return ErrPoison
	}
	if p.FailRate > 0 && p.roll(fmt.Sprintf("%d/%s/%d", p.Seed, task, attempt)) < p.FailRate {
		return fmt.Errorf("attempt %d: %w", attempt, ErrTransient)
	}
	return nil
}

// WorkTime is the lesson time attempt number attempt of task takes: Work,
// spread evenly over [Work-Jitter, Work+Jitter) by a hash of (Seed, task,
// attempt) when Jitter is set, and never negative. Durations that vary to
// the nanosecond mean two goroutines of a long measured run practically
// never act at the same instant, where their order would be up to the Go
// scheduler, so such a run stays reproducible under testing/synctest.
func (p Plan) WorkTime(task string, attempt int) time.Duration {
	if p.Jitter <= 0 {
		return p.Work
	}
	r := p.roll(fmt.Sprintf("%d/work/%s/%d", p.Seed, task, attempt))
	spread := time.Duration((2*r - 1) * float64(p.Jitter))
	return max(p.Work+spread, 0)
}

// roll maps key to a number in [0,1). Failures and work times hash
// different keys so they are independent of each other.
func (p Plan) roll(key string) float64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return float64(mix(h.Sum64())>>11) / (1 << 53)
}

// mix is splitmix64's finalizer. FNV-1a alone barely changes its high bits
// when only the last bytes differ ("7/A/1" vs "7/B/2"), so without it one
// seed failed nearly all attempts or none; mixing spreads every input bit
// over the bits roll keeps.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

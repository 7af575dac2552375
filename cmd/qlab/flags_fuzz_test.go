package main

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons"
)

// parsePlan parses a command line of plan flags the way run, compare and
// tui do, and checks the values.
func parsePlan(args ...string) (planFlags, error) {
	fs := newFlagSet("run", "")
	defer helpText.Delete(fs)
	var p planFlags
	p.register(fs, 1, "")
	if _, err := parseInterspersed(fs, args, io.Discard); err != nil {
		return p, err
	}
	return p, p.check()
}

// checkRefusal: a refused value is a one-line usage error that names the
// flag as users type it.
func checkRefusal(t *testing.T, flagName string, err error) {
	if !errors.As(err, new(usageError)) {
		t.Fatalf("not a usage error: %v", err)
	}
	if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), flagName) {
		t.Fatalf("error is not one line naming %s: %q", flagName, err)
	}
}

// checkParsed is the property both fuzz targets hold: a value is either
// accepted inside its range or refused with a one-line usage error that
// names the flag as users type it.
func checkParsed(t *testing.T, flagName string, p planFlags, err error) {
	if err != nil {
		checkRefusal(t, flagName, err)
		return
	}
	if !(p.speed >= minSpeed && p.speed <= maxSpeed) {
		t.Fatalf("accepted speed %v", p.speed)
	}
	if !(p.failRate >= 0 && p.failRate <= 1) || math.IsNaN(p.failRate) {
		t.Fatalf("accepted fail rate %v", p.failRate)
	}
}

func FuzzSpeedFlag(f *testing.F) {
	for _, s := range []string{"1", "20", "0", "-3", "1e9", "NaN", "Inf", "0x10", "1000", "0.01", "0.00999", " 5", "5\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePlan("--speed", s)
		checkParsed(t, "--speed", p, err)
	})
}

func FuzzFailRateFlag(f *testing.F) {
	for _, s := range []string{"0", "0.5", "1", "1.0000001", "-0", "-1e-300", "NaN", "+Inf", "1e-400", "0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePlan("--fail-rate", s)
		checkParsed(t, "--fail-rate", p, err)
	})
}

// parseScale parses --tasks/--rate for lesson 1 (which scales) the way run
// does.
func parseScale(args ...string) (*lab.Plan, error) {
	fs := newFlagSet("run", "")
	defer helpText.Delete(fs)
	var s scaleFlags
	s.register(fs)
	if _, err := parseInterspersed(fs, args, io.Discard); err != nil {
		return nil, err
	}
	l, _ := lessons.Find(1)
	plan := lab.DefaultPlan()
	return s.apply(fs, l, &plan)
}

// checkScaled: a value is accepted into a plan inside its bounds, or
// refused with a one-line usage error naming the flag.
func checkScaled(t *testing.T, flagName string, plan *lab.Plan, err error) {
	if err != nil {
		checkRefusal(t, flagName, err)
		return
	}
	if n := len(plan.Tasks); n < 1 || n > lab.MaxTasks {
		t.Fatalf("accepted %d tasks", n)
	}
	if plan.Every < 0 || (plan.Every > 0 && (plan.Every < time.Duration(float64(time.Second)/maxRate) ||
		plan.Every > time.Duration(float64(time.Second)/minRate))) {
		t.Fatalf("accepted a gap of %v", plan.Every)
	}
}

func FuzzTasksFlag(f *testing.F) {
	for _, s := range []string{"1", "4", "10000", "100000", "100001", "0", "-1", "0x10", "1e3", "9223372036854775808", " 5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		plan, err := parseScale("--tasks", s)
		checkScaled(t, "--tasks", plan, err)
	})
}

func FuzzRateFlag(f *testing.F) {
	for _, s := range []string{"1", "0.5", "10000", "10000.0001", "0", "-1", "NaN", "+Inf", "1e-300", "5e-324", "0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		plan, err := parseScale("--rate", s)
		checkScaled(t, "--rate", plan, err)
	})
}

package main

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// parsePlan parses a command line of plan flags the way run, compare and
// tui do, and checks the values.
func parsePlan(args ...string) (planFlags, error) {
	fs := newFlagSet("run", "")
	defer delete(helpText, fs)
	var p planFlags
	p.register(fs, 1, "")
	if _, err := parseInterspersed(fs, args, io.Discard); err != nil {
		return p, err
	}
	return p, p.check()
}

// checkParsed is the property both fuzz targets hold: a value is either
// accepted inside its range or refused with a one-line usage error that
// names the flag as users type it.
func checkParsed(t *testing.T, flagName string, p planFlags, err error) {
	if err != nil {
		if !errors.As(err, new(usageError)) {
			t.Fatalf("not a usage error: %v", err)
		}
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), flagName) {
			t.Fatalf("error is not one line naming %s: %q", flagName, err)
		}
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

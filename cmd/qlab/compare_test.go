package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompareRepeatIsBounded(t *testing.T) {
	for _, n := range []string{"0", "21", "-1"} {
		code, _, errOut := qlab("compare", "10", "--repeat", n)
		assert.Equal(t, exitUsage, code, n)
		assert.Contains(t, errOut, "--repeat must be between 1 and 20, got "+n)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestCompareBrokersBadFlags: a wrong --broker combination is one line on
// stderr and exit 2, before anything is dialled, and never shows a
// password.
func TestCompareBrokersBadFlags(t *testing.T) {
	const a, b = "amqp://guest:sekrit@127.0.0.1:1/", "amqp://guest:sekrit@127.0.0.1:2/"
	cases := map[string]struct {
		args []string
		want string
	}{
		"one broker":       {[]string{"compare", "14", "--broker", a}, "--broker takes two brokers to compare, given 1"},
		"three brokers":    {[]string{"compare", "14", "--broker", a, "--broker", b, "--broker", "amqp://h:3/"}, "given 3"},
		"the same twice":   {[]string{"compare", "14", "--broker", a, "--broker", a}, "the same broker"},
		"not a URL":        {[]string{"compare", "14", "--broker", "http://guest:sekrit@h/", "--broker", b}, "is not an AMQP URL"},
		"empty URL":        {[]string{"compare", "14", "--broker", "", "--broker", b}, "needs an AMQP URL"},
		"in-memory lesson": {[]string{"compare", "3", "--broker", a, "--broker", b}, "lesson 3 runs in memory only"},
		"cluster lesson":   {[]string{"compare", "21", "--broker", a, "--broker", b}, "lesson 21 runs on the cluster"},
		"two outputs":      {[]string{"compare", "14", "--broker", a, "--broker", b, "--json", "--markdown"}, "pick one"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := qlab(c.args...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, c.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
			assert.NotContains(t, errOut, "sekrit")
		})
	}
}

// TestCompareBrokersUnreachable: a broker that does not answer ends the
// command with one line naming it, its password hidden.
func TestCompareBrokersUnreachable(t *testing.T) {
	code, out, errOut := qlab("compare", "14", "--broker", "amqp://guest:sekrit@127.0.0.1:1/", "--broker", "amqp://guest:sekrit@127.0.0.1:2/")
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "--broker amqp://guest:xxxxx@127.0.0.1:1/")
	assert.NotContains(t, errOut, "sekrit")
}

// TestCompare14OnTwoBrokers runs Q14 on RabbitMQ 3.10.8 and 4.3 and holds
// what each did: the same fates (both hold a 30 s retry behind a 5-minute
// one, quorum retry queue included), and the x-death the seed's worker
// copies into its republished retry, which 3.10.8 keeps counting and 4.3
// restarts at 1.
func TestCompare14OnTwoBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on two brokers: make quick is one broker pass")
	}
	t.Parallel() // waits on the broker: beside the other tests that wait
	old, _ := rabbittest.NeedVersion(t, "3.10")
	v43, _ := rabbittest.NeedVersion(t, "4.3")
	code, out, errOut := qlabChecked(t, "compare", "14", "--broker", old, "--broker", v43, "--repeat", "1")
	require.Equal(t, exitOK, code, errOut)
	assert.NotContains(t, out, ":guest@", "no password printed")
	assert.Contains(t, out, "RabbitMQ 3.10.8 fate")
	assert.Contains(t, out, "RabbitMQ 4.3.")
	diffs := section(out, "Where the two brokers differ")
	assert.Regexp(t, `(?m)^\s+A\s+x-death per delivery\s+0 1 2 3 4\s+0 1 1 1 1\s*$`, diffs)
	for _, what := range []string{" fate ", " attempts ", "the run "} {
		assert.NotContains(t, diffs, what, "the brokers agree on it:\n%s", diffs)
	}
	// B's one retry waits 268 s behind A's 5-minute one on both brokers,
	// classic queue or quorum: no broker tells them apart.
	assert.NotRegexp(t, `(?m)^\s+q?B\s+retries held back`, diffs)
}

// section is the part of compare's text output from the table titled
// title to the next blank line.
func section(out, title string) string {
	_, rest, _ := strings.Cut(out, title)
	body, _, _ := strings.Cut(rest, "\n\n")
	return body
}

// TestCompare25RefusedOnOneBroker: Q25 needs RabbitMQ 4.3's delayed
// retry, and its run on 3.10.8 ends with why; compare says so in a row of
// its own and still sets out what 4.3 did.
func TestCompare25RefusedOnOneBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on two brokers: make quick is one broker pass")
	}
	t.Parallel() // waits on the broker: beside the other tests that wait
	old, _ := rabbittest.NeedVersion(t, "3.10")
	v43, _ := rabbittest.NeedVersion(t, "4.3")
	code, out, errOut := qlabChecked(t, "compare", "25", "--broker", old, "--broker", v43, "--repeat", "1")
	require.Equal(t, exitOK, code, errOut)
	diffs := section(out, "Where the two brokers differ")
	assert.Regexp(t, `(?m)^\s+-\s+the run\s+failed: lesson 25 needs RabbitMQ 4\.3`, diffs)
	assert.Regexp(t, `(?m)^\s+DH\s+fate\s+-\s+done\s*$`, diffs, "the healthy message, on 4.3 only")
}

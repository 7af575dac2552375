package rabbit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/queuelab/qlab/lab/created"
)

// Names maps a seed's queue names to the names declared on the broker and
// identifies the run. The zero value uses the seed's exact names; Open
// gives it a fresh Run.
type Names struct {
	// Prefix is put in front of every seed name, e.g. "qlab-3f9a1c.".
	Prefix string
	// Run identifies the run: every message the run publishes carries it
	// as its AppId, and a Consumer treats a message with another AppId as
	// foreign (see Consumer). Sessions opened with the same Names (a
	// lesson's second connection) share it. "" means Open picks one.
	Run string
}

// RunNames returns names with a fresh random prefix, so two runs (or two
// tests) on one broker never share a queue. The prefix is the run id.
// Under make test it is recorded (lab/created) before anything is
// declared under it, so what a killed test left can be found.
func RunNames() Names {
	id := newRunID()
	created.Prefix(id)
	return Names{Prefix: id + ".", Run: id}
}

// SeedNames returns names that are the seed's exact names, for demos with
// the management UI. Only one run on a broker can use them at a time: a
// Session refuses queues that already exist.
func SeedNames() Names { return Names{} }

// PersonNames returns the seed's names under a person's prefix, so several
// people can run the same demo on one broker: "alice" gives
// "alice.sequential.queue". The prefix must pass CheckPrefix.
func PersonNames(prefix string) (Names, error) {
	if err := CheckPrefix(prefix); err != nil {
		return Names{}, err
	}
	return Names{Prefix: prefix + "."}, nil
}

// maxPrefix keeps prefixed names far below AMQP's 255-byte limit.
const maxPrefix = 32

// CheckPrefix accepts 1 to 32 ASCII letters, digits, '-' and '_',
// starting with a letter or digit, other than "amq" (RabbitMQ reserves
// names starting with "amq.").
func CheckPrefix(prefix string) error {
	bad := func(why string) error { return fmt.Errorf("prefix %q %s", prefix, why) }
	switch {
	case prefix == "" || len(prefix) > maxPrefix:
		return bad(fmt.Sprintf("must be 1 to %d characters", maxPrefix))
	case strings.EqualFold(prefix, "amq"):
		return bad("is reserved: RabbitMQ keeps names starting with amq. for itself")
	case !isAlnum(prefix[0]):
		return bad("must start with a letter or digit")
	}
	for i := range len(prefix) {
		if c := prefix[i]; !isAlnum(c) && c != '-' && c != '_' {
			return bad("may hold only letters, digits, - and _")
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// A run id is runIDPrefix and runIDBytes random bytes in hex.
const (
	runIDPrefix = "qlab-"
	runIDBytes  = 3
)

// newRunID is "qlab-" and six random hex digits.
func newRunID() string {
	var b [runIDBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return runIDPrefix + hex.EncodeToString(b[:])
}

// Of returns the broker name of seed queue name.
func (n Names) Of(name string) string { return n.Prefix + name }

// Seed returns the seed name of broker queue name (the inverse of Of); a
// name without the prefix is returned unchanged.
func (n Names) Seed(name string) string {
	if len(name) >= len(n.Prefix) && name[:len(n.Prefix)] == n.Prefix {
		return name[len(n.Prefix):]
	}
	return name
}

// hold is the broker name of the run's hold queue, where consumers hold
// foreign messages. It carries the run id, never a seed name, so it cannot
// belong to anyone else.
func (n Names) hold() string { return n.Run + ".foreign" }

// bare is the prefix without its dot, as qlab broker clean --prefix and
// lab/created take it ("qlab-3f9a1c"; "" for the seed's exact names).
func (n Names) bare() string { return strings.TrimSuffix(n.Prefix, ".") }

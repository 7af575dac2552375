package rabbit

import (
	"crypto/rand"
	"encoding/hex"
)

// Names maps a seed's queue names to the names declared on the broker.
// The zero value uses the seed's exact names.
type Names struct {
	// Prefix is put in front of every seed name, e.g. "qlab-3f9a1c.".
	Prefix string
}

// RunNames returns names with a fresh random prefix, so two runs (or two
// tests) on one broker never share a queue.
func RunNames() Names {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return Names{Prefix: "qlab-" + hex.EncodeToString(b[:]) + "."}
}

// SeedNames returns names that are the seed's exact names, for demos with
// the management UI. Runs using them share queues with every other such run.
func SeedNames() Names { return Names{} }

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

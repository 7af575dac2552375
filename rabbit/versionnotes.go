package rabbit

import (
	"strconv"
	"strings"
)

// VersionNote is one thing a RabbitMQ release line does differently from
// 3.x that the lessons use or teach, with where the claim comes from.
type VersionNote struct {
	Since  string // the first line that does it, e.g. "4.0"
	Text   string // what it does, one sentence
	Source string // "measured on 4.3.6" or the document it is quoted from
}

// versionNotes are the 4.x notes, oldest line first. A note that says
// "measured" was seen on the project's 4.3.6 node (scripts/rabbitmq.sh);
// rabbit's version tests check those on a live 4.3 broker.
var versionNotes = []VersionNote{
	{"4.0", "quorum queues cap deliveries: x-delivery-limit is 20 unless set, " +
		"then the message is dead-lettered or dropped",
		"rabbitmq-server PR #11937 (4.0)"},
	{"4.0", "an x-death header a client republishes is not read back: only " +
		"the broker's own dead-lettering writes it",
		"rabbitmq-server PR #11339 (3.13.3 only; not 4.0)"},
	{"4.3", "quorum queues can hold a returned message and redeliver it " +
		"later: x-delayed-retry-type, x-delayed-retry-min, x-delayed-retry-max",
		"the queue arguments rabbit_quorum_queue 4.3.6 reads"},
	{"4.3", "classic queue storage v1 is gone: x-queue-version 1 is refused " +
		"(406 PRECONDITION_FAILED)", "measured on 4.3.6"},
	{"4.3", "global QoS (basic.qos global=true) is a deprecated feature, " +
		"denied by default; the lessons set per-consumer prefetch only",
		"list_deprecated_features on 4.3.6"},
	{"4.3", "transient non-exclusive queues are deprecated but still " +
		"permitted by default (a warning in the broker's log)",
		"measured on 4.3.6"},
}

// VersionNotes lists what the broker of version (as it reports it,
// "4.3.6") does that 3.x does not, for the lessons: nothing for 3.x or a
// version it cannot read.
func VersionNotes(version string) []VersionNote {
	var out []VersionNote
	for _, n := range versionNotes {
		if atLeast(version, n.Since) {
			out = append(out, n)
		}
	}
	return out
}

// atLeast reports whether version (major.minor[.patch…]) is line since
// (major.minor) or later; an unreadable version is not.
func atLeast(version, since string) bool {
	vMaj, vMin, ok1 := majorMinor(version)
	sMaj, sMin, ok2 := majorMinor(since)
	if !ok1 || !ok2 {
		return false
	}
	return vMaj > sMaj || vMaj == sMaj && vMin >= sMin
}

func majorMinor(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

package lesson

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBrokerTooOld marks a broker run of a lesson whose broker lacks what
// it teaches (Lesson.MinBroker): the error says in one line which
// version it found and what that version did; a CLI exits 2, as for a
// lesson with no cluster to run on.
var ErrBrokerTooOld = errors.New("the broker is too old for this lesson")

// VersionAtLeast reports whether RabbitMQ version v ("3.10.8", "4.3.6")
// is min ("4.3") or newer, comparing major and minor. A version it cannot
// read is not.
func VersionAtLeast(v, min string) bool {
	have, ok1 := majorMinor(v)
	want, ok2 := majorMinor(min)
	if !ok1 || !ok2 {
		return false
	}
	return have[0] > want[0] || have[0] == want[0] && have[1] >= want[1]
}

// majorMinor reads the first two numbers of a dotted version.
func majorMinor(v string) ([2]int, bool) {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	var out [2]int
	for i := range out {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return [2]int{}, false
		}
		out[i] = n
	}
	return out, true
}

// BrokerTooOld is an error that wraps ErrBrokerTooOld with the lesson's
// own one-line account: which version it found and what that version
// did.
func BrokerTooOld(format string, args ...any) error {
	return tooOld{fmt.Sprintf(format, args...)}
}

// tooOld is BrokerTooOld's error: its text alone, and Is ErrBrokerTooOld.
type tooOld struct{ msg string }

func (e tooOld) Error() string        { return e.msg }
func (e tooOld) Is(target error) bool { return target == ErrBrokerTooOld }

package lessons

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLengthIsTheTranscripts: every lesson with a pace of its own
// (WatchSpeed above 1) says its Length, which qlab run divides by a
// slower --speed to say how long the run will take; it is the last stamp
// of the lesson's in-memory golden, within a tenth.
func TestLengthIsTheTranscripts(t *testing.T) {
	for _, l := range All {
		if l.WatchSpeed <= 1 {
			continue
		}
		require.Positive(t, l.Length, "%s has a pace of its own (%g×) and no Length", l.ID, l.WatchSpeed)
		if l.InMem == nil {
			continue
		}
		raw, err := os.ReadFile(strings.TrimSuffix(goldenPath(l), ".log") + ".json")
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		var last struct {
			TMs int64 `json:"t_ms"`
		}
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
		golden := time.Duration(last.TMs) * time.Millisecond
		assert.InDelta(t, golden.Seconds(), l.Length.Seconds(), golden.Seconds()/10,
			"%s: Length %v, its golden ends at %v", l.ID, l.Length, golden)
	}
}

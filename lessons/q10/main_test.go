package q10_test

import (
	"os"
	"testing"

	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestMain fails the package when a test leaves a queue under one of its
// sessions' prefixes (rabbittest.Main).
func TestMain(m *testing.M) { os.Exit(rabbittest.Main(m)) }

package check

import (
	"testing"

	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/stretchr/testify/assert"
)

// The checks read the variables the broker tests read, under the same
// names.
func TestBrokerVariablesAreRabbittests(t *testing.T) {
	assert.Equal(t, rabbittest.RequireEnv, requireBrokerEnv)
	assert.Equal(t, rabbittest.Env43, broker43Env)
}

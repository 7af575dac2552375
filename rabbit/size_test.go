package rabbit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab/labtest"
)

// maxMethods bounds the method set of the session and of each of its
// parts, exported and unexported: a type that grows past it is read in
// more than one sitting, and is split again rather than let grow.
const maxMethods = 20

// TestSessionStaysSmall counts the methods declared on Session and its
// parts in the package's source (reflect sees only exported ones) and
// checks that none embeds a field: embedding would promote methods into
// the set without declaring them here.
func TestSessionStaysSmall(t *testing.T) {
	parts := []string{"Session", "link", "health", "Topo", "Guest", "Watch", "Probes"}
	src := labtest.Declared(t, ".")
	for _, name := range parts {
		embeds, found := src.Embeds[name]
		require.True(t, found, "type %s is not declared in the package", name)
		assert.Empty(t, embeds, "%s embeds a field, which promotes its methods", name)
		methods := src.Methods[name]
		assert.LessOrEqual(t, len(methods), maxMethods, "%s has %d methods: %v", name, len(methods), methods)
	}
	assert.Positive(t, len(src.Methods["Session"]), "no method of Session was found: the count reads the wrong files")
}

package tui

import (
	"go/ast"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/lab/labtest"
)

// maxModelMethods is how many methods Model may have: it composes the
// view's components (menu, session, stage, logView, statusBar, panels)
// and routes messages among them; what one component does belongs in
// that component.
const maxModelMethods = 20

// TestModelStaysSmall counts Model's whole method set, exported and
// unexported, value and pointer receivers, from the package's source
// (reflect sees only the exported ones). A field embedded in Model would
// add its methods to Model's, so the test refuses one.
func TestModelStaysSmall(t *testing.T) {
	mt := reflect.TypeFor[Model]()
	for i := range mt.NumField() {
		f := mt.Field(i)
		assert.False(t, f.Anonymous, "Model embeds %s: its methods would be Model's; name the field", f.Name)
	}
	names := labtest.Declared(t, ".").Methods["Model"]
	// The exported ones the source shows are the ones the program sees.
	assert.Equal(t, reflect.TypeFor[*Model]().NumMethod(), exported(names), "methods: %v", names)
	assert.LessOrEqual(t, len(names), maxModelMethods, "Model's methods: %s", strings.Join(names, " "))
}

// exported counts the exported names.
func exported(names []string) int {
	n := 0
	for _, name := range names {
		if ast.IsExported(name) {
			n++
		}
	}
	return n
}

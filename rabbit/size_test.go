package rabbit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	methods, embeds := methodSets(t)
	for _, name := range parts {
		_, found := embeds[name]
		require.True(t, found, "type %s is not declared in the package", name)
		assert.Empty(t, embeds[name], "%s embeds a field, which promotes its methods", name)
		assert.LessOrEqual(t, len(methods[name]), maxMethods, "%s has %d methods: %v", name, len(methods[name]), methods[name])
	}
	assert.Positive(t, len(methods["Session"]), "no method of Session was found: the count reads the wrong files")
}

// methodSets parses the package's non-test files and returns, by type
// name, the methods declared on it (value or pointer receiver) and the
// embedded fields of each struct type.
func methodSets(t *testing.T) (methods, embeds map[string][]string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	methods, embeds = map[string][]string{}, map[string][]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					methods[id.Name] = append(methods[id.Name], d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					embeds[ts.Name.Name] = []string{}
					for _, field := range st.Fields.List {
						if len(field.Names) == 0 {
							embeds[ts.Name.Name] = append(embeds[ts.Name.Name], typeName(field.Type))
						}
					}
				}
			}
		}
	}
	return methods, embeds
}

// typeName names an embedded field's type, for the failure message.
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + typeName(x.X)
	case *ast.SelectorExpr:
		return typeName(x.X) + "." + x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

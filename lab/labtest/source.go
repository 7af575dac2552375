package labtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Types is what a package's source declares about its types: by type
// name, the methods declared on it (value or pointer receiver, exported
// or not) and, for a struct, its embedded fields. Reflection sees only
// the exported methods, and none of a type's embeddings' origins.
type Types struct {
	Methods map[string][]string
	// Embeds has an entry, maybe empty, for every struct type declared.
	Embeds map[string][]string
}

// Declared parses the non-test Go files in dir and returns what they
// declare. It fails the test on a file it cannot read or parse.
func Declared(t testing.TB, dir string) Types {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	types := Types{Methods: map[string][]string{}, Embeds: map[string][]string{}}
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
				if recv := receiver(d); recv != "" {
					types.Methods[recv] = append(types.Methods[recv], d.Name.Name)
				}
			case *ast.GenDecl:
				types.addStructs(d)
			}
		}
	}
	return types
}

// receiver names the type a method is declared on, "" for a function.
func receiver(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	recv := d.Recv.List[0].Type
	if star, ok := recv.(*ast.StarExpr); ok {
		recv = star.X
	}
	if id, ok := recv.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// addStructs records the embedded fields of each struct type in d.
func (types Types) addStructs(d *ast.GenDecl) {
	for _, spec := range d.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok {
			continue
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		types.Embeds[ts.Name.Name] = []string{}
		for _, field := range st.Fields.List {
			if len(field.Names) == 0 {
				types.Embeds[ts.Name.Name] = append(types.Embeds[ts.Name.Name], typeName(field.Type))
			}
		}
	}
}

// typeName names an embedded field's type, for a failure message.
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

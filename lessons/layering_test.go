package lessons

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// module is the import path every package of the lab starts with.
const module = "github.com/queuelab/qlab/"

// besideDesign lists the only lesson-to-lesson imports allowed: a lesson
// that runs an earlier lesson's design beside its own, or reuses one of
// its workload numbers so the two compare. A seed system's code is never
// a reason: it lives in seeds/.
var besideDesign = map[string][]string{
	"lessons/q03": {"lessons/q01", "lessons/q02"}, // Q01's and Q02's retries side by side
	"lessons/q05": {"lessons/q04"},                // Q04's retry chain, then its own
	"lessons/q07": {"lessons/q04"},                // Q04's retry chain with a DLQ
	"lessons/q08": {"lessons/q07"},                // Q07's chain, watched
	"lessons/q09": {"lessons/q07"},                // Q07's chain, alerting
	"lessons/q10": {"lessons/q09"},                // Q09's mail latency, so the two compare
	"lessons/q25": {"lessons/q19"},                // Q19's wait queues beside quorum's delay
}

// lower are the layers everything else stands on; none of them may import
// upper.
var (
	lower = []string{"lab", "flow", "inmem", "breaker", "rabbit", "store", "metrics"}
	upper = []string{"lesson", "lessons", "seeds", "serve", "compare", "run", "tui", "cmd"}
)

var lessonPkg = regexp.MustCompile(`^lessons/q[0-9]{2}$`)

// under reports whether package p is root or inside it.
func under(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

// TestLayering holds the import rules of docs/architecture.md: no arrow
// runs from a lower layer up, no lesson imports serve, seeds/ imports no
// lesson, a lesson imports another only beside its design, serve imports
// no lesson (a seed system it runs lives in seeds/), and the tools above
// the lessons reach them only through package lessons, outside their
// tests, which may run one lesson as a fixture. It reads
// every .go file's imports, tests included, from the module root. An
// external test package (package metrics_test) stands above the package it
// tests, as any importer does, so the lower layers' rule skips it.
func TestLayering(t *testing.T) {
	imports := moduleImports(t, "..")
	require := func(cond bool, format string, args ...any) {
		t.Helper()
		if !cond {
			t.Errorf(format, args...)
		}
	}
	var pkgs []string
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		for _, im := range imports[p] {
			q := im.path
			if lessonPkg.MatchString(p) {
				require(!under(q, "serve"), "%s imports %s: a lesson never imports serve", p, q)
				if lessonPkg.MatchString(q) && !under(q, p) {
					allowed := false
					for _, a := range besideDesign[p] {
						allowed = allowed || q == a
					}
					require(allowed, "%s imports %s: a seed system's code belongs in seeds/, "+
						"and running a lesson beside another needs a line in besideDesign", p, q)
				}
			}
			if under(p, "serve") {
				require(!lessonPkg.MatchString(q), "%s imports %s: serve runs seed systems from seeds/, not from a lesson", p, q)
			}
			for _, tool := range []string{"cmd", "tui", "compare", "run"} {
				require(!under(p, tool) || im.test || !lessonPkg.MatchString(q),
					"%s imports %s: %s reaches a lesson through package lessons, and a seed system through seeds/", p, q, tool)
			}
			if under(p, "seeds") {
				for _, up := range []string{"lesson", "lessons", "serve", "cmd", "tui", "compare", "run"} {
					require(!under(q, up), "%s imports %s: seeds/ stands below the lessons", p, q)
				}
			}
			for _, low := range lower {
				if im.external || !under(p, low) {
					continue
				}
				for _, up := range upper {
					require(!under(q, up), "%s imports %s: a lower layer imports an upper one", p, q)
				}
			}
		}
	}
}

// anImport is one module package imported in a directory, whether only
// an external test package (package x_test) imports it, and whether only
// test files (_test.go) do.
type anImport struct {
	path     string
	external bool
	test     bool
}

// moduleImports maps each package directory under root (relative, with
// slashes) to the module packages its files import, tests included, each
// once.
func moduleImports(t *testing.T, root string) map[string][]anImport {
	t.Helper()
	out := map[string][]anImport{}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(dir)
		external := strings.HasSuffix(f.Name.Name, "_test")
		test := strings.HasSuffix(name, "_test.go")
		for _, imp := range f.Imports {
			q, err := strconv.Unquote(imp.Path.Value)
			key := fmt.Sprint(pkg, " ", q, " ", external, " ", test)
			if err == nil && strings.HasPrefix(q, module) && !seen[key] {
				seen[key] = true
				out[pkg] = append(out[pkg], anImport{strings.TrimPrefix(q, module), external, test})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out["lessons"]) == 0 {
		t.Fatalf("read no imports of package lessons under %s: the walk is broken", root)
	}
	return out
}

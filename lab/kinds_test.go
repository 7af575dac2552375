package lab

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keep means the kind leaves a task's fate as it was.
const keep Fate = "keep"

// ledgerRules is the ledger rule of every kind: the fate a task that was
// done has after one event of that kind. A new kind fails
// TestEveryKindHasALedgerRule until it is given one here (and in Ledger).
var ledgerRules = map[Kind]Fate{
	Enqueued: FatePending, Started: keep, Succeeded: FateDone, Failed: keep,
	Moved: FatePending, Scheduled: FatePending, DeadLettered: FateDead, Dropped: FateDropped,
	Alerted: keep, Breaker: keep, Rejected: keep, Duplicate: FateDone,
	Redelivered: FatePending, Lost: FateLost, Summary: keep, Phase: keep, Received: keep,
	ChannelClosed: keep, Refused: FateRefused, Stranded: FateStranded, Mailed: keep,
}

func TestEveryKindHasALedgerRule(t *testing.T) {
	for _, k := range Kinds {
		want, ok := ledgerRules[k]
		require.True(t, ok, "kind %q has no ledger rule: add it to ledgerRules and to Ledger.observe", k)
		var l Ledger
		l.Observe(Event{Kind: Enqueued, Task: "T"})
		l.Observe(Event{Kind: Succeeded, Task: "T"})
		l.Observe(Event{Kind: k, Task: "T", TMs: 5})
		got, _ := l.Task("T")
		if want == keep {
			want = FateDone
		}
		assert.Equal(t, want, got.Fate, "fate after %s", k)
		wantAttempts := 0
		if k == Started {
			wantAttempts = 1
		}
		assert.Equal(t, wantAttempts, got.Attempts, "attempts after %s", k)
	}
	assert.Len(t, ledgerRules, len(Kinds), "ledgerRules names a kind that Kinds does not list")
}

// TestEveryKindIsListed reads the package's source for every constant of
// type Kind and requires each in Kinds: the tests that check a kind's
// ledger rule (TestEveryKindHasALedgerRule), log and Mermaid lines
// (render's TestEveryKindRenders) and TUI rule (tui's
// TestSceneHasARuleForEveryKind) walk Kinds, so a kind missing there would
// escape them all.
func TestEveryKindIsListed(t *testing.T) {
	declared := kindConstants(t)
	require.NotEmpty(t, declared)
	for name, value := range declared {
		assert.True(t, slices.Contains(Kinds, value), "%s (%q) is declared but not listed in lab.Kinds", name, value)
	}
	assert.Len(t, Kinds, len(declared), "Kinds lists a kind twice, or one that is not a Kind constant")
}

// kindConstants maps the name of every `Kind = "..."` constant in the
// package's non-test files to its value.
func kindConstants(t *testing.T) map[string]Kind {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	out := map[string]Kind{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "Kind" {
					continue
				}
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.True(t, ok, "Kind constant %s is not a string literal", name.Name)
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					out[name.Name] = Kind(v)
				}
			}
		}
	}
	return out
}

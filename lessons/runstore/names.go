package runstore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/store/sqlstore"
)

// Where a run's store lives, named after the run's queue prefix, so that
// what a killed run left can be found from the one name it printed
// first: PostgreSQL schema <prefix>_<lesson>_<random>_<part>
// (qlab_3f9a1c_q18_07c2_due), SQLite under a temp dir
// <prefix>-<lesson>-<random> holding the owner's process id.

// ownerFile holds, in a run's SQLite temp dir, the id of the process that
// made it: Clean removes the dir only once that process is gone.
const ownerFile = "owner.pid"

// prefixOf is the queue prefix of env's run without its dot, or "" when
// the run has no names of its own yet (a test's broker run: the session
// picks a fresh prefix itself).
func prefixOf(env *lesson.Env) string {
	if env.Names == nil {
		return ""
	}
	return strings.TrimSuffix(env.Names.Prefix, ".")
}

// schemaTag is prefix as the start of a schema name: lower case, '-' as
// '_', "qlab_" in front of one that does not start with a letter; a run
// with no prefix gets "qlab_" and a random part.
func schemaTag(prefix string) string {
	if prefix == "" {
		return fmt.Sprintf("qlab_%08x", rand.Uint32())
	}
	tag := strings.ReplaceAll(strings.ToLower(prefix), "-", "_")
	if tag[0] < 'a' || tag[0] > 'z' {
		tag = "qlab_" + tag
	}
	return tag
}

// SchemaName is the PostgreSQL schema of part of lesson slug in the run
// under prefix: the prefix first, then the lesson, a random part (two
// stores of one run never share one) and the part.
func SchemaName(prefix, slug, part string) string {
	return fmt.Sprintf("%s_%s_%04x_%s", schemaTag(prefix), slug, rand.Uint32()&0xffff, part)
}

// schemasOf matches the schemas SchemaName gives runs under prefix, and
// no other prefix's.
func schemasOf(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(schemaTag(prefix)) + `_q[0-9]{2}_[0-9a-f]{4}_[a-z0-9_]+$`)
}

// makeDir makes the run's SQLite temp dir, <prefix>-<lesson>-<random>
// (qlab-<lesson>-<random> for a run with no prefix), with the owner file.
func makeDir(prefix, slug string) (string, error) {
	dir, err := os.MkdirTemp("", dirStem(prefix, slug))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// dirStem is the start of the temp dir's name of lesson slug's run under
// prefix.
func dirStem(prefix, slug string) string {
	return cmp.Or(prefix, "qlab") + "-" + slug + "-"
}

// logWhere tells the run's log where its store is, and what removes it
// should the run be killed.
func logWhere(env *lesson.Env, kind string, cfg sqlstore.Config, prefix string) {
	where, remove := cfg.Dir, "rm -r "+cfg.Dir
	if cfg.URL != "" {
		where, remove = "schema "+cfg.Schema, "DROP SCHEMA "+cfg.Schema+" CASCADE"
	}
	if prefix != "" {
		remove = "qlab broker clean --prefix " + prefix
	}
	env.Log().Info("the run's status store is "+kind+", "+where, "if_killed", remove)
}

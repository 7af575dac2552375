package runstore

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/store/sqlstore"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
)

// TestSchemaNameCarriesThePrefix: a run's schema starts with its queue
// prefix (it was qlab_q18_<random>_due, which no one could trace to the
// run), and Clean's match takes no other prefix's.
func TestSchemaNameCarriesThePrefix(t *testing.T) {
	name := SchemaName("qlab-3f9a1c", "q18", "due")
	assert.Regexp(t, `^qlab_3f9a1c_q18_[0-9a-f]{4}_due$`, name)
	assert.True(t, schemasOf("qlab-3f9a1c").MatchString(name))
	assert.False(t, schemasOf("qlab-3f9a1").MatchString(name), "a shorter prefix's")
	assert.False(t, schemasOf("qlab-3f9a1c").MatchString(SchemaName("qlab-3f9a1c0", "q18", "due")), "a longer prefix's")
	assert.Regexp(t, `^qlab_7alice_q20_[0-9a-f]{4}_crash_r$`, SchemaName("7Alice", "q20", "crash_r"), "a letter first")
}

// deadPID is the id of a process that has ended.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// TestOpenNamesTheStoreAfterTheRun: a broker run's SQLite store lives in
// a temp dir named after its prefix, holding its owner's pid, and the
// run's log says where it is and what removes it.
func TestOpenNamesTheStoreAfterTheRun(t *testing.T) {
	t.Setenv(sqlstore.EnvURL, "")
	var log bytes.Buffer
	env := &lesson.Env{
		Options: lesson.Options{Names: &lesson.Names{Prefix: "qlab-0d0e0f.", Run: "qlab-0d0e0f"},
			Logger: slog.New(slog.NewTextHandler(&log, nil))},
		Stream: lab.NewStream("q18", lab.Rabbit, lab.NewClock(1)),
	}
	db, err := Open(t.Context(), env, "due")
	require.NoError(t, err)
	defer db.Drop()
	dir := db.Config.Dir
	assert.True(t, strings.HasPrefix(filepath.Base(dir), "qlab-0d0e0f-q18-"), dir)
	owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid()), string(owner))
	assert.Contains(t, log.String(), dir)
	assert.Contains(t, log.String(), "qlab broker clean --prefix qlab-0d0e0f")
}

// TestCleanRemovesDeadRunsDirs: Clean removes a prefix's SQLite dir whose
// owner is gone (a run killed by SIGKILL left it), and leaves the dir of
// a run still going and every other prefix's.
func TestCleanRemovesDeadRunsDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const prefix = "qlab-1a2b3c"
	live, err := makeDir(prefix, "q18")
	require.NoError(t, err)
	dead, err := makeDir(prefix, "q18")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dead, ownerFile), []byte(strconv.Itoa(deadPID(t))), 0o644))
	other, err := makeDir("qlab-1a2b3c0", "q18")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(other, ownerFile), []byte(strconv.Itoa(deadPID(t))), 0o644))

	res, err := Clean(t.Context(), prefix, "", false)
	require.NoError(t, err)
	assert.Equal(t, []string{dead}, res.Dirs)
	assert.Equal(t, []string{live}, res.InUse)
	assert.NoDirExists(t, dead)
	assert.DirExists(t, live)
	assert.DirExists(t, other, "another prefix's dir")
}

// TestCleanDropsDeadSchemas: on PostgreSQL, Clean drops a prefix's schema
// that no connection uses (its run was killed) and leaves the schema of a
// store still open, and every other prefix's.
func TestCleanDropsDeadSchemas(t *testing.T) {
	url := sqlstoretest.NeedPostgres(t)
	const prefix = "qlab-4d5e6f"
	open := func(schema string) *sqlstore.Store {
		s, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: url, Schema: schema})
		require.NoError(t, err)
		t.Cleanup(func() {
			again, err := sqlstore.Open(context.Background(), sqlstore.Config{URL: url, Schema: schema})
			if err == nil {
				_ = again.Drop(context.Background())
			}
		})
		return s
	}
	live := open(SchemaName(prefix, "q18", "due"))
	defer live.Close()
	deadName := SchemaName(prefix, "q20", "crash_r")
	require.NoError(t, open(deadName).Close()) // the run died: its schema stays, no connection uses it
	otherName := SchemaName("qlab-4d5e6f0", "q18", "due")
	require.NoError(t, open(otherName).Close())

	res, err := Clean(t.Context(), prefix, url, true)
	require.NoError(t, err)
	assert.Equal(t, []string{deadName}, res.Schemas, "dry run")
	res, err = Clean(t.Context(), prefix, url, false)
	require.NoError(t, err)
	assert.Equal(t, []string{deadName}, res.Schemas)
	assert.Equal(t, []string{live.Schema()}, res.InUse)
	res, err = Clean(t.Context(), prefix, url, true)
	require.NoError(t, err)
	assert.Empty(t, res.Schemas, "dropped")
	assert.Equal(t, 1, schemaCount(t, url, otherName), "another prefix's schema")
}

// schemaCount is 1 when schema exists at url, else 0.
func schemaCount(t *testing.T, url, schema string) int {
	res, _, err := sqlstore.DropDeadSchemas(t.Context(), url, func(s string) bool { return s == schema }, true)
	require.NoError(t, err)
	return len(res)
}

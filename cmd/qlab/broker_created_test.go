package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab/created"
	"github.com/queuelab/qlab/lessons/q10"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/store/sqlstore"
)

// childEnv makes this test binary the test-like child of
// TestBrokerCleanCreated; childRunEnv and childSchemaEnv name the run
// prefix and schema it creates, which its parent records first.
const (
	childEnv       = "QLAB_CREATED_CHILD"
	childRunEnv    = "QLAB_CREATED_CHILD_RUN"
	childSchemaEnv = "QLAB_CREATED_CHILD_SCHEMA"
)

// TestCreatedChild is not a test of its own: run by
// TestBrokerCleanCreated with childEnv set, it declares as a test does (a
// run prefix, a queue holding a message, an exchange, the hold queue
// and, with PostgreSQL, a schema), says "ready PREFIX SCHEMA" and waits
// to be killed, before any cleanup.
func TestCreatedChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("the child of TestBrokerCleanCreated")
	}
	run := os.Getenv(childRunEnv)
	created.Prefix(run) // as RunNames does
	names := rabbit.Names{Run: run, Prefix: run + "."}
	conn, err := amqp.Dial(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	ch, err := conn.Channel()
	require.NoError(t, err)
	for _, q := range []string{names.Of("created.queue"), names.Run + ".foreign"} {
		_, err = ch.QueueDeclare(q, true, false, false, false, nil)
		require.NoError(t, err)
	}
	require.NoError(t, ch.Publish("", names.Of("created.queue"), false, false, amqp.Publishing{Body: []byte("left")}))
	require.NoError(t, ch.ExchangeDeclare(names.Of("created.x"), "direct", true, false, false, false, nil))
	schema := "-"
	if url := os.Getenv(sqlstore.EnvURL); strings.HasPrefix(url, "postgres") {
		schema = os.Getenv(childSchemaEnv)
		_, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: url, Schema: schema})
		require.NoError(t, err)
	}
	fmt.Printf("ready %s %s\n", names.Run, schema)
	time.Sleep(time.Hour) // until killed
}

// TestBrokerCleanCreated: a test process killed by SIGINT (as Ctrl-C
// kills it) or SIGKILL runs no cleanup and leaves its queues, exchange
// and schema; clean --created finds them through the process's record
// and deletes them, and nothing of a prefix no ended process recorded.
func TestBrokerCleanCreated(t *testing.T) {
	t.Parallel() // waits on killed children and the broker: beside the others
	url := rabbittest.NeedBroker(t)
	// The stranger is this process's, recorded where make test records
	// it, so a Ctrl-C that skips the cleanup below still gets it deleted.
	strangerRun := "qlab-created-stranger-" + fmt.Sprint(os.Getpid())
	created.Prefix(strangerRun)
	stranger := rabbit.Names{Prefix: strangerRun + "."}
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() }) // after the delete below: cleanups run last first
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclare(stranger.Of("created.queue"), false, false, false, false, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = ch.QueueDelete(stranger.Of("created.queue"), false, false, false) })

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel() // a child and a record directory of its own
			dir := t.TempDir()
			prefix, schema := startChildAndKill(t, dir, sig)
			names := rabbit.Names{Prefix: prefix + "."}
			left := []string{names.Of("created.queue"), prefix + ".foreign"}
			for _, q := range left {
				require.True(t, queueExists(t, q), "the killed child should have left %s", q)
			}
			code, out, errOut := qlab("broker", "clean", "--created", dir)
			require.Equal(t, exitOK, code, errOut)
			for _, q := range left {
				assert.False(t, queueExists(t, q), "left after clean --created: %s", q)
				assert.Contains(t, out, "queue "+q)
			}
			assert.False(t, exchangeExists(t, names.Of("created.x")), "exchange left after clean --created")
			if schema != "-" {
				assert.Contains(t, out, "schema "+schema)
				assert.False(t, schemaExists(t, schema), "schema %s left after clean --created", schema)
			}
			assert.True(t, queueExists(t, stranger.Of("created.queue")), "clean --created deleted a queue it had no record of")
			recs, err := created.Read(dir)
			require.NoError(t, err)
			assert.Empty(t, recs, "the ended process's record should go once its leftovers are deleted")
		})
	}
}

// startChildAndKill runs TestCreatedChild with its record in dir, waits
// for it to declare, kills it with sig and returns its prefix and schema.
// This process records the child's names first, in its own record (make
// test's): a Ctrl-C kills both before the test's clean-up, and make's
// clean then finds them through this process's record.
func startChildAndKill(t *testing.T, dir string, sig syscall.Signal) (prefix, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run := rabbit.RunNames().Run // recorded here, as it makes it
	childSchema := fmt.Sprintf("qlab_created_%s", strings.ReplaceAll(strings.TrimPrefix(run, "qlab-"), "-", "_"))
	created.Schema(childSchema)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCreatedChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", created.EnvDir+"="+dir,
		childRunEnv+"="+run, childSchemaEnv+"="+childSchema)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "ready" {
			prefix, schema = f[1], f[2]
			break
		}
	}
	require.NotEmpty(t, prefix, "the child never said ready")
	_, err = os.Stat(filepath.Join(dir, fmt.Sprint(cmd.Process.Pid)))
	require.NoError(t, err, "the child kept no record")
	require.NoError(t, cmd.Process.Signal(sig))
	err = cmd.Wait()
	require.Error(t, err, "the child should die of %s", sig)
	return prefix, schema
}

func exchangeExists(t *testing.T, name string) bool {
	t.Helper()
	return onNewChannel(t, func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(name, "direct", true, false, false, false, nil)
	}) == nil
}

func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	dropped, inUse, err := sqlstore.DropDeadSchemas(t.Context(), os.Getenv(sqlstore.EnvURL),
		func(s string) bool { return s == name }, true)
	require.NoError(t, err)
	return len(dropped)+len(inUse) > 0
}

// TestBrokerCleanCreatedOn43: on the 4.3 broker, which rabbitmqctl here
// cannot list, clean --created finds an ended process's leftovers by the
// lessons' names and the hold queue, under each of its prefixes.
func TestBrokerCleanCreatedOn43(t *testing.T) {
	url43 := rabbittest.Need(t, rabbittest.V43)
	rabbittest.NeedBroker(t)
	t.Setenv(rabbittest.Env43, url43)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	dir := t.TempDir()
	// Prefixes are cleaned several at a time: a few, each with its own
	// leftover, and none may be missed.
	var record string
	var left []string
	for i := range 3 {
		names := rabbit.RunNames()
		record += fmt.Sprintf("prefix %s\n", names.Run)
		left = append(left, names.Run+".foreign")
		if i == 0 {
			left = append(left, names.Of(q10.Lesson.Topologies()[0].Queues[0].Name))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprint(dead.Process.Pid)), []byte(record), 0o644))
	conn, err := amqp.Dial(url43)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	for _, q := range left {
		_, err := ch.QueueDeclare(q, true, false, false, false, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = ch.QueueDelete(q, false, false, false) })
	}
	code, out, errOut := qlab("broker", "clean", "--created", dir)
	require.Equal(t, exitOK, code, errOut)
	for _, q := range left {
		assert.Contains(t, out, "queue "+q)
		c, err := amqp.Dial(url43) // a passive declare of a gone queue closes the channel
		require.NoError(t, err)
		pch, err := c.Channel()
		require.NoError(t, err)
		_, err = pch.QueueDeclarePassive(q, true, false, false, false, nil)
		assert.Error(t, err, "left on 4.3 after clean --created: %s", q)
		c.Close()
	}
}

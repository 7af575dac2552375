// Package runstore opens the status store a lesson run uses (lessons Q18
// and Q23): a map in memory, and on the broker the real database,
// SQLite in a temp dir of the run's or PostgreSQL when QLAB_DATABASE_URL
// is set, in a schema of the run's own.
package runstore

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
)

// Opened is a run's store and how to delete it.
type Opened struct {
	store.Store
	// Kind names the database: "a map", "SQLite", "PostgreSQL".
	Kind string
	// Config opens the same database from another process (Q20's worker);
	// zero for the map, which no other process can reach.
	Config sqlstore.Config
	// Drop deletes the SQLite file or the PostgreSQL schema (nothing for
	// the map), after the run's Options.Stores, if any, read its final
	// counts.
	Drop func()
}

// Open opens the store of part name of env's lesson: a map in memory; on
// the broker, SQLite in a file under a new temp dir, or PostgreSQL in a
// new schema when env.Database (else QLAB_DATABASE_URL) names one. Both
// carry the run's queue prefix (SchemaName, DirPattern), so qlab broker
// clean --prefix finds them after a kill (Clean), and the run logs where
// its store is. It registers the store with env.Stores (the TUI's panel)
// under name.
func Open(ctx context.Context, env *lesson.Env, name string) (Opened, error) {
	if env.Stream.Backend() == lab.InMem {
		m := store.NewMemory()
		closed := env.Stores.Add(name, "a map", m)
		return Opened{m, "a map", sqlstore.Config{}, func() { closed(context.WithoutCancel(ctx)) }}, nil
	}
	slug, prefix := env.Stream.Lesson(), prefixOf(env)
	cfg := sqlstore.Config{
		URL:    cmp.Or(env.Database, os.Getenv(sqlstore.EnvURL)),
		Schema: SchemaName(prefix, slug, name),
	}
	if cfg.URL == "" {
		dir, err := makeDir(prefix, slug)
		if err != nil {
			return Opened{}, fmt.Errorf("store: %w", err)
		}
		cfg.Dir = dir
	}
	dir, kind := cfg.Dir, "SQLite"
	if cfg.URL != "" {
		kind = "PostgreSQL"
	}
	s, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return Opened{}, err
	}
	logWhere(env, kind, cfg, prefix)
	closed := env.Stores.Add(name, kind, s)
	return Opened{s, kind, cfg, func() {
		closed(context.WithoutCancel(ctx))
		_ = s.Drop(context.WithoutCancel(ctx))
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}}, nil
}

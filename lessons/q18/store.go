package q18

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
)

// Opened is a status store a lesson opened, how to reach it from another
// process, and how to delete it.
type Opened struct {
	store.Store
	// Config opens the same database from another process (Q20's worker);
	// zero for the map, which no other process can reach.
	Config sqlstore.Config
	drop   func()
}

// Drop closes and deletes the store: the SQLite file or the schema.
func (o Opened) Drop() { o.drop() }

// OpenStore opens the status store of part name of a birthday lesson: a
// map in memory; on the broker, SQLite in a file under a temp dir of the
// run's, or PostgreSQL in a schema of the run's own when QLAB_DATABASE_URL
// is set. Drop deletes the file or the schema.
func OpenStore(ctx context.Context, env *lesson.Env, name string) (Opened, error) {
	if env.Stream.Backend() == lab.InMem {
		return Opened{Store: store.NewMemory(), drop: func() {}}, nil
	}
	cfg := sqlstore.Config{
		URL:    os.Getenv(sqlstore.EnvURL),
		Schema: fmt.Sprintf("qlab_%s_%08x_%s", env.Stream.Lesson(), rand.Uint32(), name),
	}
	if cfg.URL == "" {
		dir, err := os.MkdirTemp("", "qlab-"+env.Stream.Lesson()+"-")
		if err != nil {
			return Opened{}, fmt.Errorf("store: %w", err)
		}
		cfg.Dir = dir
	}
	dir := cfg.Dir
	s, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return Opened{}, err
	}
	return Opened{Store: s, Config: cfg, drop: func() {
		_ = s.Drop(context.WithoutCancel(ctx))
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}}, nil
}

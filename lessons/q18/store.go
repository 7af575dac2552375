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

// openedStore is a variant's status store and how to delete it.
type openedStore struct {
	store.Store
	drop func()
}

// openStore opens variant name's status store: a map in memory; on the
// broker, SQLite in a file under a temp dir of the run's, or PostgreSQL in
// a schema of the run's own when QLAB_DATABASE_URL is set. drop deletes
// the file or the schema.
func openStore(ctx context.Context, env *lesson.Env, name string) (openedStore, error) {
	if env.Stream.Backend() == lab.InMem {
		return openedStore{store.NewMemory(), func() {}}, nil
	}
	cfg := sqlstore.Config{
		URL:    os.Getenv(sqlstore.EnvURL),
		Schema: fmt.Sprintf("qlab_q18_%08x_%s", rand.Uint32(), name),
	}
	if cfg.URL == "" {
		dir, err := os.MkdirTemp("", "qlab-q18-")
		if err != nil {
			return openedStore{}, fmt.Errorf("store: %w", err)
		}
		cfg.Dir = dir
	}
	dir := cfg.Dir
	s, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return openedStore{}, err
	}
	return openedStore{s, func() {
		_ = s.Drop(context.WithoutCancel(ctx))
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}}, nil
}

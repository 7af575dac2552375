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

// OpenedStore is a run's status store and how to delete it.
type OpenedStore struct {
	store.Store
	Drop func() // deletes the file or the schema; call it once, when done
}

// OpenStore opens the status store called name (a Q18 variant, or a
// Q24 part's users table): a map in memory; on the broker, SQLite in a
// file under a temp dir of the run's, or PostgreSQL in a schema of the
// run's own when QLAB_DATABASE_URL is set. Drop deletes the file or the
// schema.
func OpenStore(ctx context.Context, env *lesson.Env, name string) (OpenedStore, error) {
	if env.Stream.Backend() == lab.InMem {
		return OpenedStore{store.NewMemory(), func() {}}, nil
	}
	cfg := sqlstore.Config{
		URL:    os.Getenv(sqlstore.EnvURL),
		Schema: fmt.Sprintf("qlab_%08x_%s", rand.Uint32(), name),
	}
	if cfg.URL == "" {
		dir, err := os.MkdirTemp("", "qlab-store-")
		if err != nil {
			return OpenedStore{}, fmt.Errorf("store: %w", err)
		}
		cfg.Dir = dir
	}
	dir := cfg.Dir
	s, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return OpenedStore{}, err
	}
	return OpenedStore{s, func() {
		_ = s.Drop(context.WithoutCancel(ctx))
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}}, nil
}

package runstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/queuelab/qlab/store/sqlstore"
)

// Cleaned is what Clean found of killed runs' stores under a prefix.
type Cleaned struct {
	Schemas []string // PostgreSQL schemas dropped (with dryRun: to drop)
	Dirs    []string // SQLite temp dirs removed (with dryRun: to remove)
	InUse   []string // schemas and dirs left: their run is still going
}

// Clean removes the stores that runs under prefix left behind: the
// SQLite temp dirs in os.TempDir() whose owner process is gone, and, when
// databaseURL names a PostgreSQL database, the schemas no connection uses
// (sqlstore.DropDeadSchemas). A store whose run still goes is left and
// listed in InUse. With dryRun it removes nothing.
func Clean(ctx context.Context, prefix, databaseURL string, dryRun bool) (Cleaned, error) {
	var res Cleaned
	if prefix == "" {
		return res, errors.New("clean needs a prefix")
	}
	if err := cleanDirs(prefix, dryRun, &res); err != nil {
		return res, err
	}
	if !strings.HasPrefix(databaseURL, "postgres://") && !strings.HasPrefix(databaseURL, "postgresql://") {
		return res, nil
	}
	dropped, inUse, err := sqlstore.DropDeadSchemas(ctx, databaseURL, schemasOf(prefix).MatchString, dryRun)
	res.Schemas, res.InUse = dropped, append(res.InUse, inUse...)
	return res, err
}

// cleanDirs removes prefix's SQLite temp dirs whose owner is gone.
func cleanDirs(prefix string, dryRun bool, res *Cleaned) error {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), prefix+"-q[0-9][0-9]-*"))
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not a run's store dir: no owner file
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(owner))); err != nil || alive(pid) {
			res.InUse = append(res.InUse, dir)
			continue
		}
		if !dryRun {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
		}
		res.Dirs = append(res.Dirs, dir)
	}
	return nil
}

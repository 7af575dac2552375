package sqlstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/queuelab/qlab/store"
)

// What a killed run left in PostgreSQL: its store's schema, which only
// Drop removes. A store's connections carry its schema as their
// application_name for as long as it is open, so a schema no connection
// names is one whose run is gone, wherever that run ran.

// DropDeadSchemas drops, on the PostgreSQL database at url, every schema
// whose name match accepts and that no connection uses: what killed runs
// left. With dryRun it drops nothing and says what it would drop. It
// returns the schemas dropped (or to drop) and those left because a run
// still uses them.
func DropDeadSchemas(ctx context.Context, url string, match func(schema string) bool, dryRun bool) (dropped, inUse []string, err error) {
	pc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w: %s does not parse: %s", store.ErrUnavailable, EnvURL, redactIn(err.Error(), url))
	}
	pc.ConnectTimeout = DefaultConnectTimeout
	db := stdlib.OpenDB(*pc)
	defer db.Close()
	// Every schema but PostgreSQL's own: a run under --names exact
	// --prefix alice keeps its store in alice_q18_…, which a filter on
	// 'qlab%' never showed to match (the fault suite's kill case left one
	// such schema each run). match alone decides which are a run's.
	rows, err := db.QueryContext(ctx, `SELECT nspname FROM pg_namespace
		WHERE nspname NOT LIKE 'pg\_%' AND nspname NOT IN ('information_schema', 'public')
		ORDER BY nspname`)
	if err != nil {
		return nil, nil, fmt.Errorf("store: listing schemas at %s: %s", Redact(url), oneLine(redactIn(connectReason(err).Error(), url)))
	}
	var found []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, nil, err
		}
		if schemaName.MatchString(name) && match(name) { // the name goes into DROP SCHEMA: only plain ones
			found = append(found, name)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, nil, err
	}
	for _, name := range found {
		var users int
		err := db.QueryRowContext(ctx,
			`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, name).Scan(&users)
		switch {
		case err != nil:
			return dropped, inUse, fmt.Errorf("store: checking schema %s: %w", name, err)
		case users > 0:
			inUse = append(inUse, name)
			continue
		case !dryRun:
			if _, err := db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+name+" CASCADE"); err != nil {
				return dropped, inUse, fmt.Errorf("store: dropping schema %s: %w", name, err)
			}
		}
		dropped = append(dropped, name)
	}
	return dropped, inUse, nil
}

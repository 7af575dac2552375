package sqlstore

import "context"

// OpenPostgresBroken is Open on PostgreSQL whose last CREATE fails (a
// syntax error): a set-up that fails after the schema exists.
func OpenPostgresBroken(ctx context.Context, cfg Config) (*Store, error) {
	cfg.ConnectTimeout = DefaultConnectTimeout
	return openPostgres(ctx, cfg, append(postgres.schema(), "CREATE TABLE broken ("))
}

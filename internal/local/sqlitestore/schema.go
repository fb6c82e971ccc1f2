package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

const schema = `
CREATE TABLE IF NOT EXISTS accounts (
	user_id    TEXT PRIMARY KEY,
	plan       TEXT NOT NULL,
	rate_limit INTEGER NOT NULL DEFAULT 0,
	balance    INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
	held       INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
	granted    INTEGER NOT NULL DEFAULT 0,
	captured   INTEGER NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS holds (
	work_id    TEXT PRIMARY KEY,
	user_id    TEXT NOT NULL REFERENCES accounts(user_id),
	kind       TEXT NOT NULL,
	amount     INTEGER NOT NULL,
	created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS holds_created ON holds(created_at);
CREATE INDEX IF NOT EXISTS holds_user ON holds(user_id, created_at);
CREATE TABLE IF NOT EXISTS grants (
	user_id    TEXT NOT NULL REFERENCES accounts(user_id),
	grant_id   TEXT NOT NULL,
	amount     INTEGER NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (user_id, grant_id)
);
CREATE TABLE IF NOT EXISTS api_keys (
	key_hash   TEXT PRIMARY KEY,
	prefix     TEXT NOT NULL UNIQUE,
	user_id    TEXT NOT NULL REFERENCES accounts(user_id),
	created_at TEXT NOT NULL,
	revoked_at TEXT,
	name               TEXT NOT NULL DEFAULT '',
	scopes             TEXT NOT NULL DEFAULT '',
	daily_credit_limit INTEGER NOT NULL DEFAULT 0,
	last_used_at       TEXT
);
CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys(user_id);
CREATE TABLE IF NOT EXISTS generations (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	uuid          TEXT NOT NULL UNIQUE,
	user_id       TEXT NOT NULL,
	upstream_id   TEXT NOT NULL DEFAULT '',
	model         TEXT NOT NULL,
	model_version TEXT NOT NULL,
	kind          TEXT NOT NULL,
	input         TEXT NOT NULL,
	image_count   INTEGER NOT NULL,
	output_urls   TEXT NOT NULL DEFAULT '[]',
	status        TEXT NOT NULL,
	error         TEXT NOT NULL DEFAULT '',
	credits_used  INTEGER NOT NULL,
	created_at    TEXT NOT NULL,
	updated_at    TEXT NOT NULL,
	deadline      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS generations_user_created ON generations(user_id, created_at);
CREATE INDEX IF NOT EXISTS generations_status ON generations(status, deadline);
CREATE TABLE IF NOT EXISTS long_videos (
	id               TEXT PRIMARY KEY,
	user_id          TEXT NOT NULL,
	prompt           TEXT NOT NULL,
	model            TEXT NOT NULL,
	language_code    TEXT NOT NULL,
	enable_narration INTEGER NOT NULL,
	video_style      TEXT NOT NULL,
	scenes           TEXT NOT NULL,
	status           TEXT NOT NULL,
	final_video_url  TEXT NOT NULL DEFAULT '',
	total_duration   REAL NOT NULL DEFAULT 0,
	error            TEXT NOT NULL DEFAULT '',
	credits_held     INTEGER NOT NULL,
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL,
	deadline         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS long_videos_user_created ON long_videos(user_id, created_at);
CREATE TABLE IF NOT EXISTS rate_limits (
	user_id    TEXT NOT NULL,
	window     TEXT NOT NULL,
	count      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (user_id, window)
);
CREATE INDEX IF NOT EXISTS rate_limits_expiry ON rate_limits(expires_at);
CREATE TABLE IF NOT EXISTS usage (
	user_id TEXT NOT NULL,
	month   TEXT NOT NULL,
	credits INTEGER NOT NULL,
	jobs    INTEGER NOT NULL,
	PRIMARY KEY (user_id, month)
);
CREATE TABLE IF NOT EXISTS idempotency (
	user_id     TEXT NOT NULL,
	key         TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	status_code INTEGER NOT NULL DEFAULT 0,
	body        BLOB,
	created_at  TEXT NOT NULL,
	expires_at  TEXT NOT NULL,
	PRIMARY KEY (user_id, key)
);
CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency(expires_at);
CREATE TABLE IF NOT EXISTS journal (
	user_id    TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	at         TEXT NOT NULL,
	type       TEXT NOT NULL,
	amount     INTEGER NOT NULL,
	balance    INTEGER NOT NULL,
	held       INTEGER NOT NULL,
	captured   INTEGER NOT NULL,
	granted    INTEGER NOT NULL,
	work_id    TEXT NOT NULL DEFAULT '',
	work_kind  TEXT NOT NULL DEFAULT '',
	grant_id   TEXT NOT NULL DEFAULT '',
	model      TEXT NOT NULL DEFAULT '',
	key_prefix TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (user_id, seq)
);
CREATE INDEX IF NOT EXISTS journal_user_at ON journal(user_id, at, seq);
CREATE INDEX IF NOT EXISTS journal_user_work ON journal(user_id, work_id);
CREATE TABLE IF NOT EXISTS usage_daily (
	user_id     TEXT NOT NULL,
	day         TEXT NOT NULL,
	model       TEXT NOT NULL,
	key_prefix  TEXT NOT NULL,
	credits     INTEGER NOT NULL,
	generations INTEGER NOT NULL,
	videos      INTEGER NOT NULL,
	PRIMARY KEY (user_id, day, model, key_prefix)
);
CREATE TABLE IF NOT EXISTS key_spend (
	user_id    TEXT NOT NULL,
	key_prefix TEXT NOT NULL,
	day        TEXT NOT NULL,
	spent      INTEGER NOT NULL,
	PRIMARY KEY (user_id, key_prefix, day)
);
CREATE TABLE IF NOT EXISTS slots (
	provider TEXT PRIMARY KEY,
	state    TEXT NOT NULL
);
`

// pollClaims is its own table, so databases made before it need no migration.
// So is stream_leases: each account's open event streams
// (store.StreamLeases as JSON).
const pollClaimsSchema = `
CREATE TABLE IF NOT EXISTS stream_leases (
	user_id TEXT PRIMARY KEY,
	leases  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS poll_claims (
	uuid        TEXT PRIMARY KEY,
	attempt     INTEGER NOT NULL,
	lease_until TEXT NOT NULL
);
`

// addedColumns are columns added after the first release; Open adds each to
// a database made before it.
var addedColumns = []struct{ table, column, decl string }{
	{"accounts", "webhook_secret", "TEXT NOT NULL DEFAULT ''"},
	{"generations", "webhook_url", "TEXT NOT NULL DEFAULT ''"},
	{"generations", "webhook_events", "TEXT NOT NULL DEFAULT '[]'"},
	{"generations", "webhook_attempts", "TEXT NOT NULL DEFAULT '[]'"},
	{"long_videos", "webhook_url", "TEXT NOT NULL DEFAULT ''"},
	{"long_videos", "webhook_events", "TEXT NOT NULL DEFAULT '[]'"},
	{"long_videos", "webhook_attempts", "TEXT NOT NULL DEFAULT '[]'"},
	{"long_videos", "scene_status", "TEXT NOT NULL DEFAULT '{}'"},
	// seq is a generation's integer id, counted per account (the table's
	// own id counts across accounts and is internal).
	{"generations", "seq", "INTEGER NOT NULL DEFAULT 0"},
	{"generations", "upstream", "TEXT NOT NULL DEFAULT ''"},
	{"generations", "upstream_model", "TEXT NOT NULL DEFAULT ''"},
	{"generations", "upstream_jobs", "TEXT NOT NULL DEFAULT '[]'"},
	// What a hold's journal entries and usage carry (the journal).
	{"holds", "model", "TEXT NOT NULL DEFAULT ''"},
	{"holds", "key_prefix", "TEXT NOT NULL DEFAULT ''"},
	// The life of the stored files: when their retention ends ('' before
	// there are outputs) and where their deletion stands ('', removing,
	// removed).
	{"generations", "output_expires_at", "TEXT NOT NULL DEFAULT ''"},
	{"generations", "data_removal", "TEXT NOT NULL DEFAULT ''"},
	{"long_videos", "output_expires_at", "TEXT NOT NULL DEFAULT ''"},
	{"long_videos", "data_removal", "TEXT NOT NULL DEFAULT ''"},
	// 1 once the record's outputs are being written: it ends completed or
	// failed, never canceled (ClaimGenerationFinish).
	{"generations", "finishing", "INTEGER NOT NULL DEFAULT 0"},
	{"long_videos", "finishing", "INTEGER NOT NULL DEFAULT 0"},
	// A long video's production options (domain.Studio) as JSON.
	{"long_videos", "studio", "TEXT NOT NULL DEFAULT '{}'"},
	// 0: the default retention.
	{"accounts", "output_retention_days", "INTEGER NOT NULL DEFAULT 0"},
	// Keys managed by their holder: scopes '' (a key made before scopes)
	// reads as every scope; daily_credit_limit in cents, 0 for none.
	{"api_keys", "name", "TEXT NOT NULL DEFAULT ''"},
	{"api_keys", "scopes", "TEXT NOT NULL DEFAULT ''"},
	{"api_keys", "daily_credit_limit", "INTEGER NOT NULL DEFAULT 0"},
	{"api_keys", "last_used_at", "TEXT"},
	// The keys above a key, nearest first, with their limits
	// ("mgk_a:1000,mgk_b:0", cents); '' for the owner's keys. A hold
	// records its key's ancestors ("mgk_a,mgk_b") to give back to them.
	{"api_keys", "ancestors", "TEXT NOT NULL DEFAULT ''"},
	{"holds", "key_ancestors", "TEXT NOT NULL DEFAULT ''"},
	// The bucket key of the whole input when input holds its elided form.
	{"generations", "input_object", "TEXT NOT NULL DEFAULT ''"},
	// The provider's own progress figure, 0-100 (domain.Generation.Progress).
	{"generations", "progress", "INTEGER NOT NULL DEFAULT 0"},
	// The caller's deadline (deadline_seconds), '' for none.
	{"generations", "cancel_at", "TEXT NOT NULL DEFAULT ''"},
	// A long video's render count, and its running regenerate of a scene
	// (domain.Regeneration as JSON; '' when none runs).
	{"long_videos", "revision", "INTEGER NOT NULL DEFAULT 1"},
	{"long_videos", "regenerate", "TEXT NOT NULL DEFAULT ''"},
	// The revision the latest regenerate begun was to make
	// (domain.LongVideo.LastRegenerate); 0 when none began.
	{"long_videos", "last_regenerate", "INTEGER NOT NULL DEFAULT 0"},
}

// numberGenerations gives the generations of a database made before seq its
// per-account numbers, in the order they were made, and makes them unique.
func numberGenerations(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `UPDATE generations SET seq = (SELECT COUNT(*) FROM generations AS g
		WHERE g.user_id = generations.user_id AND g.id <= generations.id) WHERE seq = 0`); err != nil {
		return fmt.Errorf("number generations per account: %w", err)
	}
	if _, err := db.ExecContext(ctx, `CREATE UNIQUE INDEX IF NOT EXISTS generations_user_seq ON generations(user_id, seq)`); err != nil {
		return fmt.Errorf("index generations per account: %w", err)
	}
	return nil
}

func addColumns(ctx context.Context, db *sql.DB) error {
	for _, c := range addedColumns {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&n); err != nil {
			return fmt.Errorf("inspect %s.%s: %w", c.table, c.column, err)
		}
		if n > 0 {
			continue
		}
		if _, err := db.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` `+c.decl); err != nil {
			return fmt.Errorf("add %s.%s: %w", c.table, c.column, err)
		}
	}
	return nil
}

// openJournals gives each account of a database made before the journal,
// that has totals and no entry yet, an opening entry carrying them, so that
// `mediagen ledger verify` replays it from there.
func openJournals(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `INSERT INTO journal (user_id, seq, at, type, amount, balance, held, captured, granted)
		SELECT user_id, 1, ?, 'opening', 0, balance, held, captured, granted FROM accounts
		WHERE (balance != 0 OR held != 0 OR captured != 0 OR granted != 0)
		AND NOT EXISTS (SELECT 1 FROM journal WHERE journal.user_id = accounts.user_id)`, formatTime(time.Now()))
	if err != nil {
		return fmt.Errorf("open the journals of earlier accounts: %w", err)
	}
	return nil
}

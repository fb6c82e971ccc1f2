package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func (s *Store) CreateGeneration(ctx context.Context, g *domain.Generation) error {
	credits, err := domain.CreditsToCents(g.CreditsUsed)
	if err != nil {
		return fmt.Errorf("create generation %s: %w", g.UUID, err)
	}
	urls, err := json.Marshal(nonNil(g.OutputURLs))
	if err != nil {
		return fmt.Errorf("create generation %s: %w", g.UUID, err)
	}
	events, err := json.Marshal(nonNil(g.Webhook.Events))
	if err != nil {
		return fmt.Errorf("create generation %s: %w", g.UUID, err)
	}
	// The account's next number is taken in the insert itself: one
	// statement, under SQLite's write lock.
	err = s.w.QueryRowContext(ctx, `INSERT INTO generations
		(uuid, user_id, upstream_id, model, model_version, kind, input, input_object, image_count, output_urls, status, error,
		 credits_used, created_at, updated_at, deadline, webhook_url, webhook_events, cancel_at, seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
		        (SELECT COALESCE(MAX(seq), 0) + 1 FROM generations WHERE user_id = ?))
		ON CONFLICT(uuid) DO NOTHING RETURNING seq`,
		g.UUID, g.UserID, g.UpstreamID, g.Model, g.ModelVersion, string(g.Kind), string(g.Input), g.InputObject, g.ImageCount,
		string(urls), string(g.Status), g.Error, credits, formatTime(g.CreatedAt), formatTime(g.UpdatedAt),
		formatTime(g.Deadline), g.Webhook.URL, string(events), formatOptionalTime(g.CancelAt), g.UserID).Scan(&g.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("create generation %s: %w", g.UUID, domain.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("create generation %s: %w", g.UUID, err)
	}
	return nil
}

const generationColumns = `seq, uuid, user_id, upstream_id, model, model_version, kind, input, input_object, image_count,
	output_urls, status, error, credits_used, created_at, updated_at, deadline, webhook_url, webhook_events,
	webhook_attempts, upstream, upstream_model, upstream_jobs, output_expires_at, data_removal, finishing, progress, cancel_at`

// listedColumns are generationColumns without the input, which the list
// does not show (store.Generations.ListGenerations).
var listedColumns = strings.Replace(generationColumns, " input,", " '' AS input,", 1)

func (s *Store) GetGeneration(ctx context.Context, uuid string) (domain.Generation, error) {
	return s.getGeneration(ctx, `uuid = ?`, uuid)
}

func (s *Store) GetGenerationByID(ctx context.Context, userID string, id int64) (domain.Generation, error) {
	return s.getGeneration(ctx, `user_id = ? AND seq = ?`, userID, id)
}

// getGeneration reads one generation by its key, not interrupted by its
// caller's cancellation: the read takes microseconds, while watching its
// context cost two goroutines per read (database/sql's and the driver's),
// about 8 % of a status request's CPU. Other reads stay cancelable (and
// TestCanceledReadsLeaveNoStaleSnapshot keeps cancelling them).
func (s *Store) getGeneration(ctx context.Context, where string, args ...any) (domain.Generation, error) {
	gs, err := s.queryGenerations(context.WithoutCancel(ctx), generationColumns, `WHERE `+where, args...)
	return firstOf(gs, err, fmt.Sprintf("generation %v", args[len(args)-1]))
}

func (s *Store) queryGenerations(ctx context.Context, columns, where string, args ...any) ([]domain.Generation, error) {
	return queryRows(ctx, s, "read generations", `SELECT `+columns+` FROM generations `+where, args,
		func(rows *sql.Rows) (domain.Generation, error) {
			var g domain.Generation
			var kind, input, urls, status, created, updated, deadline, events, attempts, jobs, expires, removal, cancelAt string
			var credits int64
			var finishing bool
			err := rows.Scan(&g.ID, &g.UUID, &g.UserID, &g.UpstreamID, &g.Model, &g.ModelVersion, &kind, &input,
				&g.InputObject, &g.ImageCount, &urls, &status, &g.Error, &credits, &created, &updated, &deadline, &g.Webhook.URL,
				&events, &attempts, &g.Upstream, &g.UpstreamModel, &jobs, &expires, &removal, &finishing, &g.Progress, &cancelAt)
			if err != nil {
				return domain.Generation{}, fmt.Errorf("read generations: %w", err)
			}
			g.Kind, g.Status = domain.MediaKind(kind), domain.Status(status)
			if input != "" {
				g.Input = json.RawMessage(input)
			}
			g.CreditsUsed = domain.CentsToCredits(credits)
			if err := unmarshalColumns(g.UUID, []any{&g.OutputURLs, &g.Webhook.Events, &g.WebhookAttempts, &g.UpstreamJobs},
				urls, events, attempts, jobs); err != nil {
				return domain.Generation{}, err
			}
			g.CreatedAt, g.UpdatedAt, g.Deadline, err = parseRecordTimes(created, updated, deadline)
			if err == nil {
				g.Files, err = storedFiles(expires, removal, finishing)
			}
			if err == nil && cancelAt != "" {
				g.CancelAt, err = parseTime(cancelAt)
			}
			return g, err
		})
}

func (s *Store) SetUpstreamJobs(ctx context.Context, uuid string, run domain.UpstreamRun, at time.Time) error {
	first, jobs, err := store.UpstreamJobsOf(run)
	if err != nil {
		return fmt.Errorf("set upstream jobs of %s: %w", uuid, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE generations SET upstream_id = ?, upstream = ?, upstream_model = ?,
		upstream_jobs = ?, updated_at = ? WHERE uuid = ? AND status = ? AND upstream_id IN ('', ?)`,
		first, run.Upstream, run.Model, string(jobs), formatTime(at), uuid, string(domain.StatusProcessing), first)
	if err != nil {
		return fmt.Errorf("set upstream jobs of %s: %w", uuid, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	g, err := s.GetGeneration(ctx, uuid)
	if err != nil {
		return err
	}
	return fmt.Errorf("set upstream jobs of %s: status %s, job %q: %w", uuid, g.Status, g.UpstreamID, domain.ErrConflict)
}

func (s *Store) SetGenerationProgress(ctx context.Context, uuid string, progress int) error {
	progress = min(max(progress, 0), 100)
	res, err := s.w.ExecContext(ctx, `UPDATE generations SET progress = ? WHERE uuid = ? AND status = ? AND progress < ?`,
		progress, uuid, string(domain.StatusProcessing), progress)
	if err != nil {
		return fmt.Errorf("set progress of %s: %w", uuid, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	_, err = s.GetGeneration(ctx, uuid) // missing: ErrNotFound; else unchanged on purpose
	return err
}

func (s *Store) FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error {
	urls, err := json.Marshal(nonNil(o.OutputURLs))
	if err != nil {
		return fmt.Errorf("finish generation %s: %w", uuid, err)
	}
	return s.updateOutcome(ctx, "generations", "uuid", uuid, o.Status,
		`status = ?, output_urls = ?, error = ?, output_expires_at = ?, updated_at = ?`,
		string(o.Status), string(urls), o.Error, formatOptionalTime(o.OutputExpiresAt), formatTime(at))
}

func (s *Store) ClaimGenerationFinish(ctx context.Context, uuid string, at time.Time) error {
	return s.updateProcessing(ctx, "generations", "uuid", uuid, `finishing = 1, updated_at = ?`, formatTime(at))
}

func (s *Store) SetGenerationRemoval(ctx context.Context, uuid string, r domain.Removal, at time.Time) error {
	return s.setRemoval(ctx, "generations", "uuid", uuid, r, at, "")
}

func (s *Store) ListGenerations(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error) {
	where, args, err := listWhere(q, "uuid")
	if err != nil {
		return store.Page[domain.Generation]{}, err
	}
	gs, err := s.queryGenerations(ctx, listedColumns, where, args...)
	if err != nil {
		return store.Page[domain.Generation]{}, err
	}
	return windowPage(gs, q.Window(), q.Limit,
		func(g domain.Generation) bool { return q.Matches(g.Status, g.Model, g.ModelVersion) },
		func(g domain.Generation) store.Cursor { return store.Cursor{CreatedAt: g.CreatedAt, ID: g.UUID} }), nil
}

// CountGenerations counts an account's generations; tests use it to prove
// that a refused request wrote nothing.
func (s *Store) CountGenerations(ctx context.Context, userID string) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM generations WHERE user_id = ?`, userID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count generations of %s: %w", userID, err)
	}
	return n, nil
}

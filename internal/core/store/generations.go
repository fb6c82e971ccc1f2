package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Generations keeps single generations.
type Generations interface {
	// CreateGeneration assigns g.ID from the account's own sequence (its
	// first generation is 1, so an id says nothing of other accounts) and
	// stores the record; ErrAlreadyExists if g.UUID is taken.
	CreateGeneration(ctx context.Context, g *domain.Generation) error
	GetGeneration(ctx context.Context, uuid string) (domain.Generation, error)
	// GetGenerationByID finds the account's generation numbered id;
	// ErrNotFound if it has none (whatever other accounts have).
	GetGenerationByID(ctx context.Context, userID string, id int64) (domain.Generation, error)
	// SetUpstreamJobs records where a generation still processing runs
	// (upstream, model, jobs; upstream_id is the first job's id), once:
	// ErrConflict if it is final or has another first job.
	SetUpstreamJobs(ctx context.Context, uuid string, run domain.UpstreamRun, at time.Time) error
	// FinishGeneration writes a terminal outcome once: ErrConflict if the
	// generation is no longer processing, or if o is canceled and the
	// generation is finishing (ClaimGenerationFinish).
	FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error
	// ClaimGenerationFinish marks a generation still processing as
	// finishing (StoredFiles.Finishing) before the first byte of its
	// outputs is written: from then on it ends completed or failed, never
	// canceled. The claim and a cancel's FinishGeneration are one
	// conditional write each on the record, so exactly one of them wins.
	// Claiming again is harmless (nil: a redelivered poll takes over a
	// crashed one's claim); ErrConflict if the generation is final,
	// ErrNotFound if missing.
	ClaimGenerationFinish(ctx context.Context, uuid string, at time.Time) error
	// SetGenerationProgress records the provider's progress figure of a
	// generation still processing (domain.Generation.Progress) when it is
	// above the stored one: it never goes back, and a final record is left
	// alone (both nil). ErrNotFound if missing.
	SetGenerationProgress(ctx context.Context, uuid string, progress int) error
	// ListGenerations pages through an account's generations, newest first.
	// A filtered page examines q.Window() records (WindowPage). The list
	// shows no input, so its items carry none (Input nil): a store need
	// not read an input kept apart from its record.
	ListGenerations(ctx context.Context, q ListQuery) (Page[domain.Generation], error)
	// SetGenerationRemoval moves the deletion of a final generation's
	// files forward. The state only moves forward (none, removing,
	// removed), so a crash or a retry around the files' deletion never
	// shows a record as removed while its files remain:
	//   - to RemovalRemoving: ErrConflict while the generation is
	//     processing; one already removed stays so (nil);
	//   - to RemovalRemoved: only from removing or removed, ErrConflict
	//     otherwise, so the files' deletion always comes between the two;
	//   - ErrNotFound if missing, ErrInvalid for another state.
	SetGenerationRemoval(ctx context.Context, uuid string, r domain.Removal, at time.Time) error
}

// UpstreamJobsOf is what an adapter's SetUpstreamJobs stores of run: the
// first job's id (the generation's upstream_id) and the jobs as JSON. A run
// without a job is an error.
func UpstreamJobsOf(run domain.UpstreamRun) (first string, jobs []byte, err error) {
	if len(run.Jobs) == 0 {
		return "", nil, errors.New("no job")
	}
	if jobs, err = json.Marshal(run.Jobs); err != nil {
		return "", nil, err
	}
	return run.Jobs[0].ID, jobs, nil
}

package store

import (
	"context"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// LongVideos keeps long-form videos.
type LongVideos interface {
	CreateLongVideo(ctx context.Context, v domain.LongVideo) error
	GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error)
	// FinishLongVideo writes a terminal outcome once: ErrConflict if the
	// video is no longer processing, or if o is canceled and the video is
	// finishing.
	FinishLongVideo(ctx context.Context, id string, o domain.Outcome, at time.Time) error
	// ClaimLongVideoFinish marks a video still processing as finishing
	// before its final file is written, as ClaimGenerationFinish does for
	// a generation.
	ClaimLongVideoFinish(ctx context.Context, id string, at time.Time) error
	// ListLongVideos pages through an account's long videos, newest first.
	// A filtered page examines q.Window() records (WindowPage). The list
	// shows no texts, so its items may carry none (Prompt empty, Scenes
	// with their numbers only): a store need not read texts kept apart
	// from their record.
	ListLongVideos(ctx context.Context, q ListQuery) (Page[domain.LongVideo], error)
	// SetSceneStatus records a scene's state while the video is processing
	// (ErrConflict once it is final, ErrNotFound if it is missing).
	SetSceneStatus(ctx context.Context, videoID string, scene int, state domain.SceneState, at time.Time) error
	// SetLongVideoRemoval moves the deletion of a final video's files
	// forward, as SetGenerationRemoval does for a generation.
	SetLongVideoRemoval(ctx context.Context, id string, r domain.Removal, at time.Time) error
	// BeginRegenerate puts the regenerate r on a completed video at
	// revision r.Revision-1: ErrConflict if the video is not completed,
	// is at another revision or has a regenerate running (ErrNotFound if
	// it is missing).
	BeginRegenerate(ctx context.Context, id string, r domain.Regeneration, at time.Time) error
	// SetRegenerateState records the regenerating scene's job while the
	// regenerate of that revision runs (ErrConflict once it has ended).
	SetRegenerateState(ctx context.Context, id string, revision int, state domain.SceneState, at time.Time) error
	// EndRegenerate ends the regenerate of that revision once: completed,
	// the video is at that revision with o's final video and duration, and
	// the scene's texts are the regenerate's; otherwise the video is left
	// as it was. ErrConflict if that regenerate is not running.
	EndRegenerate(ctx context.Context, id string, revision int, o domain.Outcome, at time.Time) error
}

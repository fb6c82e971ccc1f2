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
}

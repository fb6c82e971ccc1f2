package longform_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// gate stops a step once, where it is placed, until the test lets it go.
type gate struct {
	once    sync.Once
	reached chan struct{}
	resume  chan struct{}
}

func newGate() *gate { return &gate{reached: make(chan struct{}), resume: make(chan struct{})} }

func (g *gate) stop() {
	if g == nil {
		return
	}
	g.once.Do(func() { close(g.reached); <-g.resume })
}

// gatedFiles stops Assemble just before (before) or just after (after)
// its upload of the final video.
type gatedFiles struct {
	longform.Files
	before, after *gate
}

func (f *gatedFiles) PutFile(ctx context.Context, key, path, contentType string) error {
	f.before.stop()
	err := f.Files.PutFile(ctx, key, path, contentType)
	f.after.stop()
	return err
}

// gatedClaim stops Assemble just before its finishing claim.
type gatedClaim struct {
	longform.Store
	before *gate
}

func (s *gatedClaim) ClaimLongVideoFinish(ctx context.Context, id string, at time.Time) error {
	s.before.stop()
	return s.Store.ClaimLongVideoFinish(ctx, id, at)
}

type noWorkflow struct{}

func (noWorkflow) Start(context.Context, string, []byte) error { return nil }
func (noWorkflow) Stop(context.Context, string, string) error  { return nil }

// TestCancelDeleteAndCompletionRaceTheFinalVideo races a cancel, a delete
// of the outputs, or nothing, with the end of a long video: before
// Assemble's claim, before and after its upload of the final video, and
// before Finalize, on both stores. The workflow then goes on as it would
// (Finalize after Assemble, MarkFailed after a failed step). Canceled or
// removed means the final video's URL answers 404 and its object is gone;
// completed means charged.
func TestCancelDeleteAndCompletionRaceTheFinalVideo(t *testing.T) {
	ctx := context.Background()
	bucket := outputsBucket(t)
	clip := filepath.Join(t.TempDir(), "clip.mp4")
	if err := (ffmpeg.Runner{}).Run(ctx, "-f", "lavfi", "-i", "testsrc2=s=160x90:r=24:d=5", "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", clip); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"sqlite", func(t *testing.T) store.Store {
			st, err := sqlitestore.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"dynamodb", func(t *testing.T) store.Store {
			server, err := testsupport.StartDynamoDB(ctx)
			if err != nil {
				t.Fatalf("moto's server: %v", err)
			}
			t.Cleanup(server.Stop)
			st, err := server.NewStore(ctx, "paidlv")
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			st := sc.open(t)
			for _, action := range []string{"cancel", "delete", "none"} {
				for _, at := range []string{"before-the-claim", "before-the-upload", "after-the-upload", "before-finalize"} {
					t.Run(action+"/"+at, func(t *testing.T) {
						raceFinalVideo(t, st, bucket, clip, action, at)
					})
				}
			}
			t.Run("failed-after-the-upload", func(t *testing.T) { failAfterUpload(t, st, bucket, clip) })
		})
	}
}

func raceFinalVideo(t *testing.T, st store.Store, bucket *s3bucket.Bucket, clip, action, at string) {
	ctx := context.Background()
	v, sceneKey := newVideo(t, st, bucket, clip)

	g := newGate()
	files := &gatedFiles{Files: bucket}
	var claimer longform.Store = st
	switch at {
	case "before-the-claim":
		claimer = &gatedClaim{Store: st, before: g}
	case "before-the-upload":
		files.before = g
	case "after-the-upload":
		files.after = g
	}
	settings := longform.StepSettings{WorkDir: t.TempDir(), Log: quietLog()}
	assemble := longform.AssembleStep(files, claimer, bucket, ffmpeg.Runner{}, nil, nil, settings)
	finalize := longform.FinalizeStep(bucket, bucket, st, nil, bucket, settings)
	markFailed := longform.MarkFailedStep(st, nil, nil, nil, bucket, settings)

	// The workflow's tail: Assemble, then Finalize, or MarkFailed on an
	// error; stopped at the gate.
	ended := make(chan error, 1)
	go func() {
		task, err := assemble(ctx, longform.AssembleTask{VideoID: v.ID, Scenes: []longform.SceneClip{{SceneNumber: 1, Key: sceneKey}}})
		if err == nil {
			if at == "before-finalize" {
				g.stop()
			}
			_, err = finalize(ctx, task)
		}
		if err != nil {
			_, err = markFailed(ctx, longform.FailTask{VideoID: v.ID, Failure: longform.Failure{Error: "SceneFailedError", Cause: err.Error()}})
		}
		ended <- err
	}()
	select {
	case <-g.reached:
	case err := <-ended:
		t.Fatalf("the workflow ended (%v) before the gate %s", err, at)
	}
	var actErr error
	switch action {
	case "cancel":
		_, actErr = longform.NewCanceler(st, noWorkflow{}, nil, nil, nil, longform.Settings{Log: quietLog()}).Cancel(ctx, v.UserID, v.ID)
	case "delete":
		_, actErr = longform.NewOutputRemover(st, bucket, nil, longform.Settings{}).RemoveOutput(ctx, v.UserID, v.ID)
	}
	close(g.resume)
	if err := <-ended; err != nil {
		t.Fatalf("the workflow: %v", err)
	}
	got, err := st.GetLongVideo(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case action == "cancel" && at == "before-the-claim":
		if actErr != nil || got.Status != domain.StatusCanceled {
			t.Errorf("a cancel before the claim = %v, ended %s; want it to win", actErr, got.Status)
		}
	case action == "cancel":
		if !errors.Is(actErr, domain.ErrFinishing) || got.Status != domain.StatusCompleted {
			t.Errorf("a cancel %s = %v, ended %s; want ErrFinishing and completed", at, actErr, got.Status)
		}
	case action == "delete":
		if !errors.Is(actErr, domain.ErrConflict) || got.Status != domain.StatusCompleted {
			t.Errorf("a delete %s = %v, ended %s; want a conflict and completed", at, actErr, got.Status)
		}
		if _, err := longform.NewOutputRemover(st, bucket, nil, longform.Settings{}).RemoveOutput(ctx, v.UserID, v.ID); err != nil {
			t.Fatal(err)
		}
		if got, err = st.GetLongVideo(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
	default:
		if got.Status != domain.StatusCompleted {
			t.Errorf("ended %s, want completed", got.Status)
		}
	}

	a, err := st.GetAccount(ctx, v.UserID)
	if err != nil {
		t.Fatal(err)
	}
	final := media.FinalVideoKey(v.ID)
	resp, err := http.Get(bucket.URL(final))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stored, err := bucket.Exists(ctx, final)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case got.Status == domain.StatusCanceled || got.Files.Removal != domain.RemovalNone:
		if resp.StatusCode != http.StatusNotFound || stored {
			t.Errorf("%s (removal %q): the final video answers %d, stored %v; want 404 and gone", got.Status, got.Files.Removal, resp.StatusCode, stored)
		}
	case got.Status == domain.StatusCompleted:
		if resp.StatusCode != http.StatusOK || got.FinalVideoURL != bucket.URL(final) {
			t.Errorf("completed: the final video answers %d at %q", resp.StatusCode, got.FinalVideoURL)
		}
	}
	if got.Files.Removal != domain.RemovalNone {
		if keys, _ := bucket.Keys(ctx, media.LongVideoPrefix(v.ID)); len(keys) != 0 {
			t.Errorf("removed: %d objects left under the prefix: %v", len(keys), keys)
		}
	}
	switch got.Status {
	case domain.StatusCanceled:
		if !a.Balance.Equal(decimal.NewFromInt(100)) || !a.Captured.IsZero() || !a.Held.IsZero() {
			t.Errorf("canceled: balance %s captured %s held %s; want every credit back", a.Balance, a.Captured, a.Held)
		}
	case domain.StatusCompleted:
		if !a.Captured.Equal(v.CreditsHeld) || !a.Held.IsZero() {
			t.Errorf("completed: captured %s held %s; want %s charged", a.Captured, a.Held, v.CreditsHeld)
		}
	default:
		t.Errorf("ended %s", got.Status)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// newVideo is a processing one-scene video with its hold and its scene's
// clip in the bucket.
func newVideo(t *testing.T, st store.Store, bucket *s3bucket.Bucket, clip string) (domain.LongVideo, string) {
	t.Helper()
	ctx := context.Background()
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(100)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	v := domain.LongVideo{ID: uuid.NewString(), UserID: acct.UserID, Prompt: "the sea", Model: "beta-2", LanguageCode: "en",
		Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}}, Status: domain.StatusProcessing,
		CreditsHeld: decimal.NewFromInt(65), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: v.CreditsHeld, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	sceneKey := media.LongVideoPrefix(v.ID) + "scenes/001.mp4"
	if err := bucket.PutFile(ctx, sceneKey, clip, "video/mp4"); err != nil {
		t.Fatal(err)
	}
	return v, sceneKey
}

// failAfterUpload: the final video is stored, then Finalize keeps failing
// and the workflow's Catch runs MarkFailed: the video fails, its final
// video is deleted, and only then do its credits come back.
func failAfterUpload(t *testing.T, st store.Store, bucket *s3bucket.Bucket, clip string) {
	ctx := context.Background()
	v, sceneKey := newVideo(t, st, bucket, clip)
	settings := longform.StepSettings{WorkDir: t.TempDir(), Log: quietLog()}
	if _, err := longform.AssembleStep(bucket, st, bucket, ffmpeg.Runner{}, nil, nil, settings)(ctx,
		longform.AssembleTask{VideoID: v.ID, Scenes: []longform.SceneClip{{SceneNumber: 1, Key: sceneKey}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := longform.MarkFailedStep(st, nil, nil, nil, bucket, settings)(ctx,
		longform.FailTask{VideoID: v.ID, Failure: longform.Failure{Error: "TransientError", Cause: "finalize kept failing"}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetLongVideo(ctx, v.ID)
	if err != nil || got.Status != domain.StatusFailed {
		t.Fatalf("ended %s (%v), want failed", got.Status, err)
	}
	if stored, err := bucket.Exists(ctx, media.FinalVideoKey(v.ID)); err != nil || stored {
		t.Errorf("the failed video's final video is stored: %v (%v)", stored, err)
	}
	a, err := st.GetAccount(ctx, v.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Balance.Equal(decimal.NewFromInt(100)) || !a.Held.IsZero() {
		t.Errorf("failed: balance %s held %s; want every credit back", a.Balance, a.Held)
	}
}

// beforePut runs hook once, just before the first object is stored.
type beforePut struct {
	media.Bucket
	once sync.Once
	hook func()
}

func (b *beforePut) Put(ctx context.Context, key string, body io.Reader, contentType string) error {
	b.once.Do(b.hook)
	return b.Bucket.Put(ctx, key, body, contentType)
}

// TestAClipCopiedAfterItsVideoWasCanceledAndDeletedIsNotLeft: the video
// is canceled and its files deleted while a scene's clip is being copied
// (the delete lists the prefix before the clip lands); the scene's poll
// sees the video ended when it records the clip, and deletes it: nothing
// of the video is left in the bucket.
func TestAClipCopiedAfterItsVideoWasCanceledAndDeletedIsNotLeft(t *testing.T) {
	ctx := context.Background()
	r := newSceneRig(t, 0, "succeeded")
	if err := r.submit(1, "tok-1"); err != nil {
		t.Fatal(err)
	}
	copier := r.steps.Copier.(*media.Copier)
	bucket := copier.Bucket.(*s3bucket.Bucket)
	r.steps.Deleter = bucket
	var canceled, removed error
	copier.Bucket = &beforePut{Bucket: bucket, hook: func() {
		_, canceled = longform.NewCanceler(r.store, noWorkflow{}, nil, nil, nil, longform.Settings{Log: quietLog()}).Cancel(ctx, r.video.UserID, r.video.ID)
		_, removed = longform.NewOutputRemover(r.store, bucket, nil, longform.Settings{}).RemoveOutput(ctx, r.video.UserID, r.video.ID)
	}}
	if err := r.steps.PollScene(ctx, r.queue.last(t)); err != nil {
		t.Fatal(err)
	}
	if canceled != nil || removed != nil {
		t.Fatalf("cancel = %v, delete = %v during the clip's copy", canceled, removed)
	}
	v, err := r.store.GetLongVideo(ctx, r.video.ID)
	if err != nil || v.Status != domain.StatusCanceled || v.Files.Removal != domain.RemovalRemoved {
		t.Fatalf("video %s removal %q (%v), want canceled and removed", v.Status, v.Files.Removal, err)
	}
	if keys, err := bucket.Keys(ctx, media.LongVideoPrefix(r.video.ID)); err != nil || len(keys) != 0 {
		t.Errorf("objects left under the removed video's prefix: %v (%v)", keys, err)
	}
}

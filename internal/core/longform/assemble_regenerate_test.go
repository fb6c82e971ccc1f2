package longform_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

// TestARegeneratesAssemblyChangesOnlyItsScenesSpan: a regenerate's Assemble
// joins its one new clip with the others' clips as stored, under the
// revision's key (the first render's final video untouched): its frames
// are the first render's but in the regenerated scene's span.
func TestARegeneratesAssemblyChangesOnlyItsScenesSpan(t *testing.T) {
	ctx := context.Background()
	bucket := outputsBucket(t)
	ff := ffmpeg.Runner{}
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(10)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	now := time.Now().UTC()
	v := domain.LongVideo{ID: uuid.NewString(), UserID: acct.UserID, Prompt: "the sea", Model: "beta-2", LanguageCode: "en",
		Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "a"}, {SceneNumber: 2, Prompt: "b"}, {SceneNumber: 3, Prompt: "c"}},
		Status: domain.StatusProcessing, CreditsHeld: decimal.NewFromInt(1), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := st.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	clip := func(key, color string) {
		path := filepath.Join(dir, filepath.Base(key))
		if err := ff.Run(ctx, "-f", "lavfi", "-i", "color=c="+color+":s=160x90:r=24:d=5", "-c:v", "libx264", "-preset", "ultrafast",
			"-pix_fmt", "yuv420p", path); err != nil {
			t.Fatal(err)
		}
		if err := bucket.PutFile(ctx, key, path, "video/mp4"); err != nil {
			t.Fatal(err)
		}
	}
	var first []longform.SceneClip
	for n, color := range map[int]string{1: "red", 2: "green", 3: "blue"} {
		key := fmt.Sprintf("long-videos/%s/scenes/%03d.mp4", v.ID, n)
		clip(key, color)
		first = append(first, longform.SceneClip{SceneNumber: n, Key: key})
		if err := st.SetSceneStatus(ctx, v.ID, n, domain.SceneState{Status: domain.StatusCompleted}, now); err != nil {
			t.Fatal(err)
		}
	}
	again := fmt.Sprintf("long-videos/%s/scenes/002-r2.mp4", v.ID)
	clip(again, "yellow")
	steps := &longform.Steps{Store: st, Files: bucket, Deleter: bucket, FFmpeg: ff, WorkDir: t.TempDir(), Log: slog.New(slog.DiscardHandler)}
	r1, err := steps.Assemble(ctx, longform.AssembleTask{VideoID: v.ID, Scenes: first})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := steps.Finalize(ctx, r1); err != nil {
		t.Fatal(err)
	}
	regen := domain.Regeneration{SceneNumber: 2, Revision: 2, Prompt: "b2", Model: "beta-2", CreditsHeld: decimal.NewFromInt(1), StartedAt: now}
	if err := st.BeginRegenerate(ctx, v.ID, regen, now); err != nil {
		t.Fatal(err)
	}
	r2, err := steps.Assemble(ctx, longform.AssembleTask{VideoID: v.ID, Scenes: []longform.SceneClip{{SceneNumber: 2, Key: again}}, Revision: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Key != media.FinalVideoKeyAt(v.ID, 2) || r2.Revision != 2 || r2.SceneNumber != 2 || r1.Key != media.FinalVideoKey(v.ID) {
		t.Fatalf("assembled %+v after %+v; want revision 2 of scene 2 at %s", r2, r1, media.FinalVideoKeyAt(v.ID, 2))
	}
	hashes := func(key string) []string {
		path := filepath.Join(dir, fmt.Sprintf("%d-%s", len(key), filepath.Base(filepath.Dir(key))+".mp4"))
		if err := bucket.GetFile(ctx, key, path); err != nil {
			t.Fatal(err)
		}
		return frameHashes(t, ff, path)
	}
	before, after := hashes(r1.Key), hashes(r2.Key)
	const perScene = 5 * 24
	if len(before) != 3*perScene || len(after) != 3*perScene {
		t.Fatalf("%d and %d frames, want %d each", len(before), len(after), 3*perScene)
	}
	for i := range before {
		scene := i/perScene + 1
		if same := before[i] == after[i]; same != (scene != 2) {
			t.Fatalf("frame %d (scene %d) unchanged: %v; want only scene 2's changed", i, scene, same)
		}
	}
}

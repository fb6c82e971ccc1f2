package longform_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// scriptNarrator notes what it is asked to speak.
type scriptNarrator struct {
	mu    sync.Mutex
	texts []string
}

func (n *scriptNarrator) Speak(_ context.Context, _ longform.Language, text, dir string) (string, string, error) {
	n.mu.Lock()
	n.texts = append(n.texts, text)
	n.mu.Unlock()
	f, err := os.CreateTemp(dir, "speech-*.wav")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	_, err = f.WriteString("RIFF")
	return f.Name(), "audio/wav", err
}

// TestARegeneratesNarrationSpeaksTheScenesNewText: the regenerated scene
// is spoken with its new narration, the others with theirs, every track
// handed on; once the regenerate no longer runs the step stops.
func TestARegeneratesNarrationSpeaksTheScenesNewText(t *testing.T) {
	ctx := context.Background()
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	defer waitfor.Close(t, objects.Close)
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	v := domain.LongVideo{ID: uuid.NewString(), UserID: "u", Prompt: "the sea", Model: "beta-2", LanguageCode: "en", EnableNarration: true,
		Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves", Narration: "The waves."}, {SceneNumber: 2, Prompt: "gulls"}},
		Status: domain.StatusProcessing, CreditsHeld: decimal.NewFromInt(1), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := st.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/r1.mp4"}}, now); err != nil {
		t.Fatal(err)
	}
	regen := domain.Regeneration{SceneNumber: 2, Revision: 2, Prompt: "gulls", Narration: "The gulls return.", Model: "beta-2",
		CreditsHeld: decimal.NewFromInt(1), StartedAt: now}
	if err := st.BeginRegenerate(ctx, v.ID, regen, now); err != nil {
		t.Fatal(err)
	}
	narrator := &scriptNarrator{}
	steps := &longform.Steps{Store: st, Files: objects.MediaBucket(), Narrator: narrator, WorkDir: t.TempDir()}
	out, err := steps.Narrate(ctx, longform.NarrateTask{VideoID: v.ID, Revision: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(narrator.texts, []string{"The waves.", "The gulls return."}) || len(out.Tracks) != 2 {
		t.Errorf("spoke %q into %d tracks; want scene 1's narration and scene 2's new one, both handed on", narrator.texts, len(out.Tracks))
	}
	if err := st.EndRegenerate(ctx, v.ID, 2, domain.Outcome{Status: domain.StatusCanceled}, now); err != nil {
		t.Fatal(err)
	}
	var stopped *longform.SceneFailedError
	if _, err := steps.Narrate(ctx, longform.NarrateTask{VideoID: v.ID, Revision: 2}); !errors.As(err, &stopped) {
		t.Errorf("narration of an ended regenerate = %v, want a SceneFailedError", err)
	}
}

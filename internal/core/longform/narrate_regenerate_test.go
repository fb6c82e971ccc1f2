package longform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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

// markingNarrator is a scriptNarrator that also gives speech marks, as
// Polly does, and notes the texts it marked.
type markingNarrator struct {
	scriptNarrator
	marked []string
}

func (n *markingNarrator) SpeechMarks(_ context.Context, _ longform.Language, text string) ([]longform.SpeechMark, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.marked = append(n.marked, text)
	return []longform.SpeechMark{{Type: "sentence", Start: 0, End: len(text), Value: text}}, nil
}

// spokenTexts is what a narrator was asked to speak (and to mark, when it
// marks), since the last call.
type spokenTexts interface {
	longform.Narrator
	take() (spoken, marked []string)
}

func (n *scriptNarrator) take() ([]string, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.texts
	n.texts = nil
	return t, nil
}

func (n *markingNarrator) take() ([]string, []string) {
	spoken, _ := n.scriptNarrator.take()
	n.mu.Lock()
	defer n.mu.Unlock()
	m := n.marked
	n.marked = nil
	return spoken, m
}

// TestARegeneratesNarrationSpeaksOnlyTheScenesNewText: a regenerate hands
// Assemble every scene's track but pays the narrator only for its scene's
// new text; the other scenes keep the tracks their first render spoke.
// A canceled regenerate's track is never taken for the text it replaced,
// a step retried speaks nothing again, and once the regenerate no longer
// runs the step stops.
func TestARegeneratesNarrationSpeaksOnlyTheScenesNewText(t *testing.T) {
	for _, tt := range []struct {
		name     string
		narrator spokenTexts
	}{
		{"a narrator", &scriptNarrator{}},
		{"a narrator that marks its speech (Polly)", &markingNarrator{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
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
			steps := &longform.Steps{Store: st, Narrations: objects.MediaBucket(), Narrator: tt.narrator, WorkDir: t.TempDir()}
			_, marks := tt.narrator.(longform.Marker)
			narrate := func(revision int, wantSpoken ...string) longform.Narration {
				t.Helper()
				out, err := steps.Narrate(ctx, longform.NarrateTask{VideoID: v.ID, Revision: revision})
				if err != nil {
					t.Fatalf("narration of revision %d: %v", revision, err)
				}
				spoken, marked := tt.narrator.take()
				if !slices.Equal(spoken, wantSpoken) {
					t.Errorf("narration of revision %d spoke %q; want %q", revision, spoken, wantSpoken)
				}
				if marks && !slices.Equal(marked, wantSpoken) {
					t.Errorf("narration of revision %d marked %q; want %q", revision, marked, wantSpoken)
				}
				if len(out.Tracks) != 2 {
					t.Fatalf("narration of revision %d handed on %d tracks; want every scene's", revision, len(out.Tracks))
				}
				for _, tr := range out.Tracks {
					keys := []string{tr.Key}
					if marks != (tr.MarksKey != "") {
						t.Errorf("scene %d's marks key %q with a narrator that marks: %v", tr.SceneNumber, tr.MarksKey, marks)
					}
					if tr.MarksKey != "" {
						keys = append(keys, tr.MarksKey)
					}
					for _, key := range keys {
						if err := objects.MediaBucket().GetFile(ctx, key, filepath.Join(t.TempDir(), "f")); err != nil {
							t.Errorf("scene %d's track %s is not in the bucket: %v", tr.SceneNumber, key, err)
						}
					}
				}
				return out
			}
			first := narrate(0, "The waves.", "gulls")
			narrate(0) // the step retried: every track is there
			if err := st.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/r1.mp4"}}, now); err != nil {
				t.Fatal(err)
			}

			regen := domain.Regeneration{SceneNumber: 2, Revision: 2, Prompt: "gulls", Narration: "The gulls return.", Model: "beta-2",
				CreditsHeld: decimal.NewFromInt(1), StartedAt: now}
			if err := st.BeginRegenerate(ctx, v.ID, regen, now); err != nil {
				t.Fatal(err)
			}
			r2 := narrate(2, "The gulls return.")
			if r2.Tracks[0] != first.Tracks[0] || r2.Tracks[1].Key == first.Tracks[1].Key {
				t.Errorf("the regenerate's tracks %+v; want scene 1's first track and a new one for scene 2 (first: %+v)", r2.Tracks, first.Tracks)
			}
			if err := st.EndRegenerate(ctx, v.ID, 2, domain.Outcome{Status: domain.StatusCanceled}, now); err != nil {
				t.Fatal(err)
			}
			var stopped *longform.SceneFailedError
			if _, err := steps.Narrate(ctx, longform.NarrateTask{VideoID: v.ID, Revision: 2}); !errors.As(err, &stopped) {
				t.Errorf("narration of an ended regenerate = %v, want a SceneFailedError", err)
			}

			// Regenerated again with only a new prompt: scene 2 speaks its
			// prompt, as at first, not the canceled regenerate's narration.
			regen = domain.Regeneration{SceneNumber: 2, Revision: 3, Prompt: "gulls", Model: "beta-2", CreditsHeld: decimal.NewFromInt(1), StartedAt: now}
			if err := st.BeginRegenerate(ctx, v.ID, regen, now); err != nil {
				t.Fatal(err)
			}
			if r3 := narrate(3); !reflect.DeepEqual(r3.Tracks, first.Tracks) {
				t.Errorf("a regenerate back to the first texts handed on %+v; want the first render's tracks %+v", r3.Tracks, first.Tracks)
			}
		})
	}
}

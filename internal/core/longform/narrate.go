package longform

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// NarrateStep speaks each scene's narration into the bucket.
func NarrateStep(files Files, narrator Narrator, store Store, settings StepSettings) func(context.Context, NarrateTask) (Narration, error) {
	s := settings.steps()
	s.Files, s.Narrator, s.Store = files, narrator, store
	return s.Narrate
}

// NarrateTask asks for every scene's narration; the scripts are read from
// the store.
type NarrateTask struct {
	VideoID string `json:"video_id"`
	// Revision, when set, narrates for the regenerate of that revision:
	// the regenerated scene with its new texts, the others as they are.
	// Every scene is spoken again (a voice speaks the same text alike), so
	// Assemble gets every track as for a first render.
	Revision int `json:"revision,omitempty"`
}

// Narration lists the narration track of each scene.
type Narration struct {
	Tracks []Track `json:"tracks"`
}

// Track is one scene's narration in the bucket, and its speech marks when
// the narrator gives them (Marker).
type Track struct {
	SceneNumber int    `json:"scene_number"`
	Key         string `json:"key"`
	MarksKey    string `json:"marks_key,omitempty"`
}

// Narrate speaks each scene's script (its narration, else its prompt) and
// keeps the audio in the bucket, with the speech's sentence and word marks
// (newline-delimited JSON, as Polly writes them) when the narrator is a
// Marker.
func (s *Steps) Narrate(ctx context.Context, in NarrateTask) (Narration, error) {
	out := Narration{Tracks: []Track{}}
	v, err := s.Store.GetLongVideo(ctx, in.VideoID)
	if err != nil {
		return out, &TransientError{Msg: fmt.Sprintf("narration: read video: %v", err)}
	}
	if in.Revision > 0 {
		r := v.Regenerating
		if v.Status != domain.StatusCompleted || r == nil || r.Revision != in.Revision {
			return out, &SceneFailedError{Msg: fmt.Sprintf("narration stopped: the regenerate (revision %d) no longer runs", in.Revision)}
		}
		v.Scenes = r.Applied(v.Scenes)
	}
	if !v.EnableNarration {
		return out, nil
	}
	lang, ok := LookupLanguage(v.LanguageCode)
	if !ok {
		return out, &SceneFailedError{Msg: fmt.Sprintf("narration: unsupported language %q", v.LanguageCode)}
	}
	if v.Studio.Voice != "" {
		voice, ok := lookupVoice(lang.Code, v.Studio.Voice)
		if !ok {
			return out, &SceneFailedError{Msg: fmt.Sprintf("narration: no voice %q in %s", v.Studio.Voice, lang.Code)}
		}
		lang = lang.Speaker(voice)
	}
	dir, err := os.MkdirTemp(s.WorkDir, "narrate-")
	if err != nil {
		return out, &TransientError{Msg: fmt.Sprintf("narration: scratch dir: %v", err)}
	}
	defer os.RemoveAll(dir)
	for _, sc := range v.Scenes {
		path, ctype, err := s.Narrator.Speak(ctx, lang, script(sc), dir)
		if err != nil {
			return out, &TransientError{Msg: fmt.Sprintf("narration of scene %d: %v", sc.SceneNumber, err)}
		}
		key := fmt.Sprintf("long-videos/%s/narration/%03d%s", in.VideoID, sc.SceneNumber, filepath.Ext(path))
		if err := s.Files.PutFile(ctx, key, path, ctype); err != nil {
			return out, &TransientError{Msg: fmt.Sprintf("narration of scene %d: %v", sc.SceneNumber, err)}
		}
		track := Track{SceneNumber: sc.SceneNumber, Key: key}
		if m, ok := s.Narrator.(Marker); ok {
			if track.MarksKey, err = s.storeMarks(ctx, m, lang, script(sc), dir, key); err != nil {
				return out, &TransientError{Msg: fmt.Sprintf("narration of scene %d: %v", sc.SceneNumber, err)}
			}
		}
		out.Tracks = append(out.Tracks, track)
	}
	return out, nil
}

// storeMarks asks m for the speech marks of text and keeps them in the
// bucket beside the speech at key; it answers their key.
func (s *Steps) storeMarks(ctx context.Context, m Marker, lang Language, text, dir, key string) (string, error) {
	marks, err := m.SpeechMarks(ctx, lang, text)
	if err != nil {
		return "", fmt.Errorf("speech marks: %w", err)
	}
	var buf bytes.Buffer
	if err := WriteSpeechMarks(&buf, marks); err != nil {
		return "", err
	}
	path := filepath.Join(dir, strings.TrimSuffix(filepath.Base(key), filepath.Ext(key))+".marks")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return "", fmt.Errorf("speech marks: %w", err)
	}
	marksKey := strings.TrimSuffix(key, filepath.Ext(key)) + ".marks"
	if err := s.Files.PutFile(ctx, marksKey, path, SpeechMarksType); err != nil {
		return "", fmt.Errorf("speech marks: %w", err)
	}
	return marksKey, nil
}

// SpeechMarksType is the content type of speech marks, as Polly answers
// them.
const SpeechMarksType = "application/x-json-stream"

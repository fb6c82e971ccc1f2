package longform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// NarrateStep speaks each scene's narration into the bucket.
func NarrateStep(files NarrationFiles, narrator Narrator, store Store, settings StepSettings) func(context.Context, NarrateTask) (Narration, error) {
	s := settings.steps()
	s.Narrations, s.Narrator, s.Store = files, narrator, store
	return s.Narrate
}

// NarrationFiles keeps the narration tracks in the bucket. Keys lists
// those of a video already spoken (one ListObjectsV2 under its narration
// prefix), so that a track is spoken once for its text and voice.
type NarrationFiles interface {
	Keys(ctx context.Context, prefix string) ([]string, error)
	PutFile(ctx context.Context, key, path, contentType string) error
}

// NarrateTask asks for every scene's narration; the scripts are read from
// the store.
type NarrateTask struct {
	VideoID string `json:"video_id"`
	// Revision, when set, narrates for the regenerate of that revision:
	// the regenerated scene with its new texts, the others as they are.
	// Assemble gets every track as for a first render, but only a text
	// not spoken before in its voice is spoken (narrationBase): a
	// regenerate pays the narrator for its own scene's new text alone.
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
	spoken, err := s.Narrations.Keys(ctx, narrationPrefix(in.VideoID))
	if err != nil {
		return out, &TransientError{Msg: fmt.Sprintf("narration: list the tracks spoken: %v", err)}
	}
	dir, err := os.MkdirTemp(s.WorkDir, "narrate-")
	if err != nil {
		return out, &TransientError{Msg: fmt.Sprintf("narration: scratch dir: %v", err)}
	}
	defer os.RemoveAll(dir)
	for _, sc := range v.Scenes {
		track, err := s.narrate(ctx, lang, in.VideoID, sc, spoken, dir)
		if err != nil {
			return out, &TransientError{Msg: fmt.Sprintf("narration of scene %d: %v", sc.SceneNumber, err)}
		}
		out.Tracks = append(out.Tracks, track)
	}
	return out, nil
}

// narrate answers the track of a scene's script in lang: the one among
// spoken with its text and voice (a regenerate's other scenes, or a step
// retried after a failure part-way), else spoken and stored now.
func (s *Steps) narrate(ctx context.Context, lang Language, videoID string, sc domain.Scene, spoken []string, dir string) (Track, error) {
	text := script(sc)
	base := narrationBase(videoID, sc.SceneNumber, lang, text)
	track := Track{SceneNumber: sc.SceneNumber}
	for _, key := range spoken {
		if ext := filepath.Ext(key); ext != marksExt && strings.TrimSuffix(key, ext) == base {
			track.Key = key
		}
	}
	if track.Key == "" {
		path, ctype, err := s.Narrator.Speak(ctx, lang, text, dir)
		if err != nil {
			return track, err
		}
		track.Key = base + filepath.Ext(path)
		if err := s.Narrations.PutFile(ctx, track.Key, path, ctype); err != nil {
			return track, err
		}
	}
	m, ok := s.Narrator.(Marker)
	if !ok {
		return track, nil
	}
	// The marks are stored after their speech: a speech without them is
	// one whose step stopped in between.
	if marksKey := base + marksExt; slices.Contains(spoken, marksKey) {
		track.MarksKey = marksKey
		return track, nil
	}
	var err error
	track.MarksKey, err = s.storeMarks(ctx, m, lang, text, dir, track.Key)
	return track, err
}

// narrationScheme is in every track's digest. The narrators' own settings
// (Polly's engine and sample rate, espeak-ng's speed) are not: a change to
// them changes it, so that a regenerate does not join old tracks to new.
const narrationScheme = "1"

// narrationPrefix holds a video's narration tracks.
func narrationPrefix(videoID string) string {
	return "long-videos/" + videoID + "/narration/"
}

// narrationBase is the key, less its extension, of scene n's track of
// text in lang's voices: the scene's number, then a digest of what is
// spoken, so that a key holds one text in one voice and a track is never
// taken for another text's (a regenerate that changed the scene's text,
// even one canceled, stores its track beside the one it replaces).
func narrationBase(videoID string, n int, lang Language, text string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{narrationScheme, lang.Code, lang.PollyVoice, lang.PollyLanguage, lang.EspeakVoice, text}, "\x00")))
	return fmt.Sprintf("%s%03d-%x", narrationPrefix(videoID), n, sum[:8])
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
	path := filepath.Join(dir, strings.TrimSuffix(filepath.Base(key), filepath.Ext(key))+marksExt)
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return "", fmt.Errorf("speech marks: %w", err)
	}
	marksKey := strings.TrimSuffix(key, filepath.Ext(key)) + marksExt
	if err := s.Narrations.PutFile(ctx, marksKey, path, SpeechMarksType); err != nil {
		return "", fmt.Errorf("speech marks: %w", err)
	}
	return marksKey, nil
}

// marksExt ends the key of a track's speech marks, beside the track.
const marksExt = ".marks"

// SpeechMarksType is the content type of speech marks, as Polly answers
// them.
const SpeechMarksType = "application/x-json-stream"

package longform

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// PreviewFiles keeps the voices' preview clips in the bucket. Keys lists
// what is there (one ListObjectsV2 under the language's prefix: a
// HeadObject of a clip not yet spoken would need s3:ListBucket on the
// whole bucket to answer 404 rather than 403).
type PreviewFiles interface {
	Keys(ctx context.Context, prefix string) ([]string, error)
	PutFile(ctx context.Context, key, path, contentType string) error
	URL(key string) string
}

// VoiceLister answers GET /api/long-story/voices: a language's voices,
// each with a short preview clip. A clip is spoken by the narrator that
// speaks the videos (espeak-ng locally, Polly in AWS) the first time its
// voice is listed and kept in the bucket, so later lists only check it is
// there.
type VoiceLister struct {
	Narrator Narrator
	Files    PreviewFiles
	// WorkDir is the scratch directory ("" for the system's).
	WorkDir string
	Log     *slog.Logger
}

// VoiceView is one voice as the API lists it.
type VoiceView struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Gender       string `json:"gender"`
	LanguageCode string `json:"language_code"`
	Default      bool   `json:"default"`
	PreviewURL   string `json:"preview_url"`
}

// previewLines are what each language's preview says.
var previewLines = map[string]string{
	"en": "Hello. This is how I will narrate your story.",
	"es": "Hola. Así narraré tu historia.",
	"fr": "Bonjour. Voici comment je raconterai votre histoire.",
	"de": "Hallo. So werde ich deine Geschichte erzählen.",
	"it": "Ciao. Ecco come racconterò la tua storia.",
	"pt": "Olá. É assim que vou narrar a sua história.",
	"nl": "Hallo. Zo vertel ik jouw verhaal.",
	"pl": "Cześć. Tak opowiem twoją historię.",
	"hi": "नमस्ते। मैं आपकी कहानी ऐसे सुनाऊँगी।",
	"ja": "こんにちは。わたしが あなたの ものがたりを よみます。",
}

// previewPrefix holds a language's clips.
func previewPrefix(code string) string { return "voices/" + code + "/" }

// previewKey is the bucket key of a voice's clip, without its extension
// (the narrator's: Polly mp3, espeak-ng wav).
func previewKey(v Voice) string { return previewPrefix(v.Language) + v.ID + "/preview" }

// List is the voices of the language code, default first; an unsupported
// code is a 400 naming the supported ones.
func (l *VoiceLister) List(ctx context.Context, code string) ([]VoiceView, error) {
	if _, ok := LookupLanguage(code); !ok {
		var p catalog.Problems
		p.Add("language_code", fmt.Sprintf("%q is not a supported narration language (supported: %s)", truncate(code, 16), strings.Join(LanguageCodes(), ", ")))
		return nil, p.Err()
	}
	voices := languageVoices(code)
	keys, err := l.Files.Keys(ctx, previewPrefix(code))
	if err != nil {
		return nil, fmt.Errorf("voices of %s: previews: %w", code, err)
	}
	out := make([]VoiceView, 0, len(voices))
	for i, v := range voices {
		url, err := l.preview(ctx, v, keys)
		if err != nil {
			return nil, err
		}
		out = append(out, VoiceView{ID: v.ID, Name: v.Name, Gender: v.Gender, LanguageCode: v.Language, Default: i == 0, PreviewURL: url})
	}
	return out, nil
}

// preview is the URL of the voice's clip, spoken and stored if it is not
// in the bucket yet. Two first lists at once both speak it and store the
// same clip under the same key.
func (l *VoiceLister) preview(ctx context.Context, v Voice, keys []string) (string, error) {
	base := previewKey(v)
	for _, key := range keys {
		if strings.TrimSuffix(key, filepath.Ext(key)) == base {
			return l.Files.URL(key), nil
		}
	}
	lang, _ := LookupLanguage(v.Language)
	dir, err := os.MkdirTemp(l.WorkDir, "preview-")
	if err != nil {
		return "", fmt.Errorf("voice %s: preview: %w", v.ID, err)
	}
	defer os.RemoveAll(dir)
	path, ctype, err := l.Narrator.Speak(ctx, lang.Speaker(v), previewLines[v.Language], dir)
	if err != nil {
		return "", fmt.Errorf("voice %s: speak the preview: %w", v.ID, err)
	}
	key := base + filepath.Ext(path)
	if err := l.Files.PutFile(ctx, key, path, ctype); err != nil {
		return "", fmt.Errorf("voice %s: store the preview: %w", v.ID, err)
	}
	domain.Logger(l.Log).InfoContext(ctx, "voice preview stored", "voice", v.ID, "key", key)
	return l.Files.URL(key), nil
}

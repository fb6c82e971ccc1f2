package lambdastack

import (
	"net/http"
	"strings"
	"testing"
)

// The voices route on the deployed shape: its function lists the bucket's
// clips under voices/ and asks Polly (the stand-in, which checks the
// function's role allows polly:SynthesizeSpeech) for each clip at the
// first list, as its policies allow; the clips are mp3 and the media
// origin serves them.
func TestVoicesSpeaksItsPreviewClipsWithPolly(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 100)
	out := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/long-story/voices?language_code=de", "", http.StatusOK)
	voices := asList(out["voices"])
	if len(voices) != 2 {
		t.Fatalf("de voices %v, want vicki and daniel", out)
	}
	for _, raw := range voices {
		v, _ := raw.(map[string]any)
		u, _ := v["preview_url"].(string)
		if !strings.HasSuffix(u, "/preview.mp3") {
			t.Errorf("voice %v: preview %q, want Polly's mp3", v["id"], u)
			continue
		}
		if code := mediaStatus(t, l, u); code != http.StatusOK {
			t.Errorf("voice %v: the media origin answers %d for %s", v["id"], code, u)
		}
	}
	again := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/long-story/voices?language_code=de", "", http.StatusOK)
	if len(asList(again["voices"])) != 2 || asList(again["voices"])[1].(map[string]any)["preview_url"] != voices[1].(map[string]any)["preview_url"] {
		t.Errorf("second list %v, want the first's clips", again)
	}
}

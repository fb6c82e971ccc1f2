package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/local/espeak"
)

// servePolly answers Polly's SynthesizeSpeech (POST /v1/speech) with
// espeak-ng's speech in the voice's language, as Amazon Polly answers: for
// OutputFormat mp3, the audio encoded at the request's sample rate; for
// json, the speech marks of the kinds SpeechMarkTypes asks (sentence and
// word are modelled), one JSON object a line, typed
// application/x-json-stream, each mark's time in milliseconds from the
// start of that same audio and its start and end byte offsets in the text
// (espeak.Narrator.SpeakMarked speaks a sentence at a time, so the marks
// are where its sound is). Both carry x-amzn-RequestCharacters. Speech
// marks asked with an audio format are Polly's
// MarksNotSupportedForFormatException. moto's Polly answers eight zero
// bytes (and refuses the neural voices' 24000 Hz), which no assembly can
// use.
func (s *Stack) servePolly(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		Text, VoiceId, LanguageCode, OutputFormat, SampleRate, TextType string
		SpeechMarkTypes                                                 []string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	if in.TextType == "ssml" || in.OutputFormat != "mp3" && in.OutputFormat != "json" {
		writeJSONError(w, http.StatusBadRequest, "ValidationException", "the local Polly speaks text into mp3 or json speech marks only")
		return
	}
	marks := in.OutputFormat == "json"
	if !marks && len(in.SpeechMarkTypes) > 0 {
		writeJSONError(w, http.StatusBadRequest, "MarksNotSupportedForFormatException", "Speech marks are only supported for json output format.")
		return
	}
	if marks && len(in.SpeechMarkTypes) == 0 {
		writeJSONError(w, http.StatusBadRequest, "ValidationException", "SpeechMarkTypes must be set when OutputFormat is json.")
		return
	}
	for _, k := range in.SpeechMarkTypes {
		if k != longform.MarkSentence && k != longform.MarkWord {
			writeJSONError(w, http.StatusBadRequest, "ValidationException", "the local Polly marks sentences and words only, not "+k)
			return
		}
	}
	var lang longform.Language
	found := false
	// Each voice of the catalog speaks with its own espeak-ng voice, so a
	// video's chosen voice is heard in the --lambdas shape too.
	for _, v := range longform.Voices {
		l, _ := longform.LookupLanguage(v.Language)
		if v.Polly == in.VoiceId && (in.LanguageCode == "" || l.PollyLanguage == in.LanguageCode) {
			lang, found = l.Speaker(v), true
			break
		}
	}
	if !found {
		writeJSONError(w, http.StatusBadRequest, "ValidationException", "no local voice for "+in.VoiceId+" ("+in.LanguageCode+")")
		return
	}
	rate := in.SampleRate
	if rate == "" {
		rate = "24000"
	}
	if _, err := strconv.Atoi(rate); err != nil {
		writeJSONError(w, http.StatusBadRequest, "InvalidSampleRateException", "The specified sample rate is not valid.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp(s.cfg.Dir, "polly-")
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "ServiceFailureException", err.Error())
		return
	}
	defer os.RemoveAll(dir)
	wav, list, err := espeak.Narrator{}.SpeakMarked(ctx, lang, in.Text, dir, in.SpeechMarkTypes...)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "ServiceFailureException", err.Error())
		return
	}
	chars := len([]rune(in.Text))
	s.pollyCharacters.Add(int64(chars))
	w.Header().Set("x-amzn-RequestCharacters", strconv.Itoa(chars))
	if marks {
		var out bytes.Buffer
		if err := longform.WriteSpeechMarks(&out, list); err != nil {
			writeJSONError(w, http.StatusInternalServerError, "ServiceFailureException", err.Error())
			return
		}
		w.Header().Set("Content-Type", longform.SpeechMarksType)
		w.Write(out.Bytes())
		return
	}
	var mp3, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-i", wav,
		"-ar", rate, "-ac", "1", "-codec:a", "libmp3lame", "-f", "mp3", "pipe:1")
	cmd.Stdout, cmd.Stderr = &mp3, &stderr
	if err := cmd.Run(); err != nil {
		writeJSONError(w, http.StatusInternalServerError, "ServiceFailureException", "ffmpeg: "+err.Error()+": "+stderr.String())
		return
	}
	w.Header().Set("Content-Type", "audio/mpeg")
	w.Write(mp3.Bytes())
}

// PollyCharacters is the characters the stack's Polly has spoken or
// marked since it started: what Amazon Polly bills
// (x-amzn-RequestCharacters).
func (s *Stack) PollyCharacters() int64 { return s.pollyCharacters.Load() }

// pollyAction is the action AWS authorizes SynthesizeSpeech as.
const pollyAction = "polly:SynthesizeSpeech"

// pollyDenied decides a SynthesizeSpeech call, its caller authenticated,
// as IAM does for the action: the admin may; a function may when a
// statement of its role's inline policies (the template's) allows
// polly:SynthesizeSpeech and none denies it. The managed policies SAM
// attaches grant no Polly action. A refusal is Polly's 403
// AccessDeniedException, recorded with moto's denials in IAM's words.
func (s *Stack) pollyDenied(r *http.Request) *Call {
	caller := s.Moto.caller(r)
	if caller == "admin" {
		return nil
	}
	return s.functionDenied(r, caller, pollyAction, "", http.StatusForbidden)
}

package media

import (
	"fmt"
	"regexp"
	"strings"
)

// The keys of the objects the API hands out. Everything else in the bucket
// (a long-form video's scene clips and narration) is the service's own
// scratch, never served.

// OutputKeyBase is the key of a generation's i-th output, before the
// extension of its type (Copy adds it).
func OutputKeyBase(generationUUID string, i int) string {
	return fmt.Sprintf("generations/%s/%d", generationUUID, i)
}

// InputsPrefix holds the whole inputs of requests too large for their
// record (InputKey): the service's own, never published, so no origin
// serves them.
const InputsPrefix = "inputs/"

// InputRetentionDays is how long the bucket keeps an input (its lifecycle
// rule, and the local runtime's sweep): an input is read only to submit
// its generation, which ends within its deadline (at most 30 minutes), so
// the shortest rule S3 has, a day rounded up to midnight UTC, is plenty.
const InputRetentionDays = 1

// InputKey is the key of a generation's whole input.
func InputKey(generationUUID string) string { return InputsPrefix + generationUUID + "/input.json" }

// FinalVideoKey is the key of a long-form video's final file.
func FinalVideoKey(videoID string) string { return "long-videos/" + videoID + "/final.mp4" }

// CaptionsKey is the key of a long-form video's WebVTT captions, beside
// its final file.
func CaptionsKey(videoID string) string { return "long-videos/" + videoID + "/captions.vtt" }

// FinalVideoKeyAt is the key of a long-form video's final file at
// revision: the first render's is FinalVideoKey, a regenerate's is under
// r<revision>/, so the file served stays until the record points at the
// new one. Its captions are beside it (CaptionsKeyAt, captionsURL).
func FinalVideoKeyAt(videoID string, revision int) string {
	if revision <= 1 {
		return FinalVideoKey(videoID)
	}
	return fmt.Sprintf("long-videos/%s/r%d/final.mp4", videoID, revision)
}

// CaptionsKeyAt is the key of the captions beside FinalVideoKeyAt.
func CaptionsKeyAt(videoID string, revision int) string {
	if revision <= 1 {
		return CaptionsKey(videoID)
	}
	return fmt.Sprintf("long-videos/%s/r%d/captions.vtt", videoID, revision)
}

// captionsURL is the URL of the captions beside the final video at
// finalVideoURL (both are stored under the same base: Files.URL).
func captionsURL(finalVideoURL string) string {
	base, ok := strings.CutSuffix(finalVideoURL, "/final.mp4")
	if !ok {
		return ""
	}
	return base + "/captions.vtt"
}

var published = regexp.MustCompile(`^(generations/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/[0-9]{1,2}\.(mp4|png|jpg|webp)` +
	`|long-videos/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/(r[2-9]/|r[1-9][0-9]{1,3}/)?(final\.mp4|captions\.vtt)` +
	`|voices/[a-z]{2}/[a-z]+/preview\.(mp3|wav))$`)

// Published reports whether key is one the API hands out: a generation's
// output, a long-form video's final file and captions (of any revision:
// FinalVideoKeyAt), or a voice's
// preview clip (longform.VoiceLister: mp3 from Polly, wav from espeak-ng
// locally).
func Published(key string) bool { return published.MatchString(key) }

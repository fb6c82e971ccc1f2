package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// Work recorded before the release that copies uploaded files for it
// (simulated: its copy under inputs/ deleted) completes on the deployed
// shape, under the roles the template gives: with the simulator's one
// slot held, a generation naming an uploaded image and a long video
// naming uploaded music wait; their copies are deleted; once the slot
// frees, the poller, under its role, finds no copy by listing inputs/ and
// hands the provider a presigned GET of the upload itself, and Assemble,
// under its role, reads the music from the upload. Both complete, and
// moto denies nothing.
func TestWorkWithNoCopyReadsItsUploadThroughTheBucket(t *testing.T) {
	t.Parallel()
	l, _ := slotWaitStack(t, "nocopy", 0, nil)
	ctx := context.Background()
	acct := newAccount(t, l, 1000)
	img := image.NewNRGBA(image.Rect(0, 0, 24, 16))
	img.Set(3, 4, color.NRGBA{G: 200, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	song := filepath.Join(t.TempDir(), "song.mp3")
	if out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-f", "lavfi",
		"-i", "sine=frequency=60:sample_rate=22050:duration=3", "-ac", "1", "-codec:a", "libmp3lame", song).CombinedOutput(); err != nil {
		t.Fatalf("make the song: %v %s", err, out)
	}
	raw, err := os.ReadFile(song)
	if err != nil {
		t.Fatal(err)
	}
	imageURL := uploadFile(t, l, acct.APIKey, "image/png", buf.Bytes())
	songURL := uploadFile(t, l, acct.APIKey, "audio/mpeg", raw)

	holder, _ := generate(t, l, acct.APIKey, imageRequest("the slot holder [simulate:hold]"))
	b, _ := json.Marshal(map[string]any{"model": "provider-a", "model_version": "zeta",
		"input": map[string]any{"prompt": "the kite, from before the release", "image_input": []any{imageURL}}})
	gen, _ := generate(t, l, acct.APIKey, string(b))
	b, _ = json.Marshal(map[string]any{"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2",
		"scenes":    []any{map[string]any{"scene_number": 1, "prompt": "waves", "narration": "The sea comes in."}},
		"music_url": songURL, "music_volume": 0.5})
	video, _ := mustCall(t, l, acct.APIKey, http.MethodPost, "/api/long-story/videos", string(b), http.StatusOK)["video_id"].(string)

	s3c := s3.NewFromConfig(l.AdminConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := aws.String(l.Ref("OutputBucket"))
	imageID, _ := domain.ParseFileURL(imageURL)
	songID, _ := domain.ParseFileURL(songURL)
	var gone []s3types.ObjectIdentifier
	for _, k := range []string{media.SnapshotKey(gen, imageID), media.SnapshotKey(video, songID)} {
		if _, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String(k)}); err != nil {
			t.Fatalf("the create made no copy %s: %v", k, err)
		}
		gone = append(gone, s3types.ObjectIdentifier{Key: aws.String(k)})
	}
	if _, err := s3c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bucket, Delete: &s3types.Delete{Objects: gone}}); err != nil {
		t.Fatal(err)
	}
	if status, out := callAs(t, l, acct.APIKey, http.MethodPost, "/api/generations/"+holder+"/cancel", ""); status != http.StatusOK {
		t.Fatalf("cancel the slot holder: HTTP %d %v", status, out)
	}

	if view := waitStatusAs(t, l, acct.APIKey, "/api/generations/status/"+gen, 3*time.Minute); view["status"] != "completed" {
		t.Fatalf("the generation whose copy is gone ended %v", view)
	}
	handed := false
	for _, p := range l.Simulator.Predictions("provider-a/zeta") {
		in := string(p.Input)
		handed = handed || strings.Contains(in, media.UploadKey(acct.UserID, imageID))
	}
	if !handed {
		t.Error("the provider was handed no URL of the upload")
	}
	view := waitStatusAs(t, l, acct.APIKey, "/api/long-story/videos/"+video, 4*time.Minute)
	if view["status"] != "completed" {
		t.Fatalf("the video whose music copy is gone ended %v: %v\n%s", view["status"], view, l.workflowLogs())
	}
	if level := musicLevel(t, l, fmt.Sprint(view["final_video_url"]), 60); level < -40 {
		t.Errorf("music %.1f dB after the narration, want the uploaded song heard", level)
	}
	if d := l.Moto.Denials(); len(d) > 0 {
		t.Errorf("moto denied %d calls: %+v", len(d), d)
	}
}

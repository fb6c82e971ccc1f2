package longstory_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/ffmpeg"
	"github.com/mediagen-dev/mediagen/shared/local/objectstore"
	"github.com/mediagen-dev/mediagen/shared/longstory"
)

// Narration longer than its scene is sped up to 1.5x at most; beyond that the
// scene holds its last frame until the narration ends.
func TestAssembleFitsNarrationToItsScene(t *testing.T) {
	ctx := context.Background()
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	defer objects.Close(ctx)
	bucket := objects.MediaBucket()
	ff := ffmpeg.Runner{}
	dir := t.TempDir()
	tests := []struct {
		narration float64 // seconds of speech
		want      float64 // seconds of the scene
	}{
		{3, 5},  // shorter: padded with silence
		{7, 5},  // sped up 1.4x
		{9, 6},  // 1.5x gives 6 s: the last frame holds 1 s
		{12, 8}, // 1.5x gives 8 s
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%gs of narration", tt.narration), func(t *testing.T) {
			video := fmt.Sprintf("long-videos/v%d/scenes/001.mp4", i)
			speech := fmt.Sprintf("long-videos/v%d/narration/001.wav", i)
			clip, wav := filepath.Join(dir, fmt.Sprintf("c%d.mp4", i)), filepath.Join(dir, fmt.Sprintf("n%d.wav", i))
			if err := ff.Run(ctx, "-f", "lavfi", "-i", "testsrc2=s=320x180:r=24:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", clip); err != nil {
				t.Fatal(err)
			}
			if err := ff.Run(ctx, "-f", "lavfi", "-i", fmt.Sprintf("sine=d=%g", tt.narration), wav); err != nil {
				t.Fatal(err)
			}
			bucket.PutFile(ctx, video, clip, "video/mp4")
			bucket.PutFile(ctx, speech, wav, "audio/wav")
			steps := &longstory.Steps{Files: bucket, FFmpeg: ff, WorkDir: t.TempDir()}
			out, err := steps.Assemble(ctx, longstory.AssembleTask{
				VideoID:   fmt.Sprintf("v%d", i),
				Scenes:    []longstory.SceneTask{{Scene: domain.Scene{SceneNumber: 1}, Key: video, Done: true}},
				Narration: longstory.Narration{Tracks: []longstory.Track{{SceneNumber: 1, Key: speech}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(out.Duration-tt.want) > 0.15 {
				t.Errorf("scene lasts %.2f s, want %.0f", out.Duration, tt.want)
			}
			final := filepath.Join(dir, fmt.Sprintf("f%d.mp4", i))
			if err := bucket.GetFile(ctx, out.Key, final); err != nil {
				t.Fatal(err)
			}
			info, _ := ff.Probe(ctx, final)
			a, hasAudio := info.Audio()
			v, _ := info.Video()
			if !hasAudio || math.Abs(a.Duration-tt.want) > 0.15 || math.Abs(v.Duration-tt.want) > 0.15 {
				t.Errorf("video %.2f s and audio %.2f s (audio %v), want both %.0f s", v.Duration, a.Duration, hasAudio, tt.want)
			}
		})
	}
}

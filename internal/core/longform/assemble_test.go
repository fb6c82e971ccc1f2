package longform_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// Narration longer than its scene is sped up to 1.5x at most; what still
// does not fit (validation keeps narration within 7.5 s, so only a voice
// slower than its table rate) is cut: the scene never holds its last frame.
func TestAssembleFitsNarrationToItsScene(t *testing.T) {
	ctx := context.Background()
	bucket := outputsBucket(t)
	ff := ffmpeg.Runner{}
	dir := t.TempDir()
	tests := []float64{ // seconds of speech
		3,   // shorter: padded with silence
		7,   // sped up 1.4x
		7.5, // the longest narration validation lets through: 1.5x
		9,   // 1.5x gives 6 s: the last second is cut
		12,  // cut too
	}
	for i, narration := range tests {
		t.Run(fmt.Sprintf("%gs of narration", narration), func(t *testing.T) {
			video := fmt.Sprintf("long-videos/v%d/scenes/001.mp4", i)
			speech := fmt.Sprintf("long-videos/v%d/narration/001.wav", i)
			clip, wav := filepath.Join(dir, fmt.Sprintf("c%d.mp4", i)), filepath.Join(dir, fmt.Sprintf("n%d.wav", i))
			if err := ff.Run(ctx, "-f", "lavfi", "-i", "testsrc2=s=320x180:r=24:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", clip); err != nil {
				t.Fatal(err)
			}
			if err := ff.Run(ctx, "-f", "lavfi", "-i", fmt.Sprintf("sine=d=%g", narration), wav); err != nil {
				t.Fatal(err)
			}
			bucket.PutFile(ctx, video, clip, "video/mp4")
			bucket.PutFile(ctx, speech, wav, "audio/wav")
			steps := &longform.Steps{Store: assemblingStore{}, Files: bucket, FFmpeg: ff, WorkDir: t.TempDir()}
			out, err := steps.Assemble(ctx, longform.AssembleTask{
				VideoID:   fmt.Sprintf("v%d", i),
				Scenes:    []longform.SceneClip{{SceneNumber: 1, Key: video}},
				Narration: longform.Narration{Tracks: []longform.Track{{SceneNumber: 1, Key: speech}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			wantLength(t, ctx, ff, bucket, out, 5)
		})
	}
}

// total_duration is scenes × 5 s whatever the narration, whether the clips
// are joined by stream copy or re-encoded: per-scene rounding (a frame, an
// AAC packet) must not add up over 20 scenes.
func TestAssembleLastsFiveSecondsPerScene(t *testing.T) {
	ctx := context.Background()
	bucket := outputsBucket(t)
	ff := ffmpeg.Runner{}
	speeches := []float64{7.5, 0, 3, 7.5, 6, 7.5, 0, 7.5, 2, 7.5} // 0: no narration
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprintf("re-encoded %v", encoded), func(t *testing.T) {
			dir, vid := t.TempDir(), fmt.Sprintf("len-%v", encoded)
			var scenes []longform.SceneClip
			var tracks []longform.Track
			for j, seconds := range speeches {
				n := j + 1
				size := "192x108"
				if encoded && n%2 == 0 {
					size = "128x72" // sizes differ: every scene is encoded
				}
				clip := filepath.Join(dir, fmt.Sprintf("c%d.mp4", n))
				if err := ff.Run(ctx, "-f", "lavfi", "-i", "testsrc2=s="+size+":r=24:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", clip); err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprintf("long-videos/%s/scenes/%03d.mp4", vid, n)
				bucket.PutFile(ctx, key, clip, "video/mp4")
				scenes = append(scenes, longform.SceneClip{SceneNumber: n, Key: key})
				if seconds == 0 {
					continue
				}
				wav := filepath.Join(dir, fmt.Sprintf("n%d.wav", n))
				if err := ff.Run(ctx, "-f", "lavfi", "-i", fmt.Sprintf("sine=d=%g", seconds), wav); err != nil {
					t.Fatal(err)
				}
				speech := fmt.Sprintf("long-videos/%s/narration/%03d.wav", vid, n)
				bucket.PutFile(ctx, speech, wav, "audio/wav")
				tracks = append(tracks, longform.Track{SceneNumber: n, Key: speech})
			}
			steps := &longform.Steps{Store: assemblingStore{}, Files: bucket, FFmpeg: ff, WorkDir: t.TempDir()}
			out, err := steps.Assemble(ctx, longform.AssembleTask{VideoID: vid, Scenes: scenes, Narration: longform.Narration{Tracks: tracks}})
			if err != nil {
				t.Fatal(err)
			}
			wantLength(t, ctx, ff, bucket, out, 5*float64(len(speeches)))
		})
	}
}

// wantLength checks the reported duration, the file's, its picture's and its
// sound's against seconds, to within one frame (1/24 s).
func wantLength(t *testing.T, ctx context.Context, ff ffmpeg.Runner, bucket *s3bucket.Bucket, out longform.FinalizeTask, seconds float64) {
	t.Helper()
	final := filepath.Join(t.TempDir(), "final.mp4")
	if err := bucket.GetFile(ctx, out.Key, final); err != nil {
		t.Fatal(err)
	}
	info, err := ff.Probe(ctx, final)
	if err != nil {
		t.Fatal(err)
	}
	a, hasAudio := info.Audio()
	v, _ := info.Video()
	const frame = 1.0 / 24
	t.Logf("total_duration %.3f s: file %.3f s, picture %.3f s, sound %.3f s", out.Duration, info.Duration, v.Duration, a.Duration)
	if math.Abs(out.Duration-seconds) > frame || math.Abs(info.Duration-seconds) > frame {
		t.Errorf("total_duration %.3f s, file %.3f s, want %.0f s", out.Duration, info.Duration, seconds)
	}
	if !hasAudio || math.Abs(a.Duration-seconds) > frame || math.Abs(v.Duration-seconds) > frame {
		t.Errorf("picture %.3f s and sound %.3f s (sound %v), want both %.0f s", v.Duration, a.Duration, hasAudio, seconds)
	}
}

// Clips that share codec, frame size and encoding are joined by stream copy:
// every decoded frame of the video is, bit for bit, a frame of the clips, in
// order. Clips that differ are re-encoded to the first clip's size, and the
// frames are new ones.
func TestAssembleCopiesTheClipsWhenTheyMatchAndEncodesThemWhenNot(t *testing.T) {
	ctx := context.Background()
	bucket := outputsBucket(t)
	ff := ffmpeg.Runner{}
	type clip struct {
		size    string
		seconds float64
		preset  string // veryfast encodes B-frames, ultrafast does not
	}
	plain := clip{"192x108", 4, "ultrafast"}
	tests := []struct {
		name   string
		clips  []clip
		copied bool
		frames int // frames taken from each clip when copied
	}{
		{"same encoding, 4 s clips slowed to 5 s", []clip{plain, plain, plain}, true, 96},
		{"same encoding with B-frames", []clip{{"192x108", 4, "veryfast"}, {"192x108", 4, "veryfast"}}, true, 96},
		{"6 s clips without B-frames, cut at 5 s", []clip{{"192x108", 6, "ultrafast"}, {"192x108", 6, "ultrafast"}}, true, 120},
		{"6 s clips with B-frames: a cut needs encoding", []clip{{"192x108", 6, "veryfast"}, {"192x108", 6, "veryfast"}}, false, 0},
		{"frame sizes differ", []clip{plain, {"128x72", 4, "ultrafast"}}, false, 0},
		{"clip lengths differ", []clip{plain, {"192x108", 3, "ultrafast"}}, false, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			vid := fmt.Sprintf("copy%d", i)
			var scenes []longform.SceneClip
			var want []string
			for j, c := range tt.clips {
				n := j + 1
				path := filepath.Join(dir, fmt.Sprintf("c%d.mp4", n))
				src := []string{"testsrc2", "testsrc"}[j%2]
				if err := ff.Run(ctx, "-f", "lavfi", "-i", fmt.Sprintf("%s=s=%s:r=24:d=%g", src, c.size, c.seconds),
					"-c:v", "libx264", "-preset", c.preset, "-pix_fmt", "yuv420p", path); err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprintf("long-videos/%s/scenes/%03d.mp4", vid, n)
				if err := bucket.PutFile(ctx, key, path, "video/mp4"); err != nil {
					t.Fatal(err)
				}
				scenes = append(scenes, longform.SceneClip{SceneNumber: n, Key: key})
				frames := frameHashes(t, ff, path)
				want = append(want, frames[:min(tt.frames, len(frames))]...)
			}
			// Scene 1 is narrated, the others are silent.
			wav := filepath.Join(dir, "n1.wav")
			if err := ff.Run(ctx, "-f", "lavfi", "-i", "sine=d=3", wav); err != nil {
				t.Fatal(err)
			}
			speech := fmt.Sprintf("long-videos/%s/narration/001.wav", vid)
			if err := bucket.PutFile(ctx, speech, wav, "audio/wav"); err != nil {
				t.Fatal(err)
			}
			steps := &longform.Steps{Store: assemblingStore{}, Files: bucket, FFmpeg: ff, WorkDir: t.TempDir()}
			out, err := steps.Assemble(ctx, longform.AssembleTask{VideoID: vid, Scenes: scenes,
				Narration: longform.Narration{Tracks: []longform.Track{{SceneNumber: 1, Key: speech}}}})
			if err != nil {
				t.Fatal(err)
			}
			final := filepath.Join(dir, "final.mp4")
			if err := bucket.GetFile(ctx, out.Key, final); err != nil {
				t.Fatal(err)
			}
			seconds := 5 * float64(len(tt.clips))
			info, err := ff.Probe(ctx, final)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := info.Video()
			a, hasAudio := info.Audio()
			if math.Abs(out.Duration-seconds) > 0.15 || math.Abs(v.Duration-seconds) > 0.15 || !hasAudio || math.Abs(a.Duration-seconds) > 0.15 {
				t.Errorf("video %.2f s (picture %.2f s, sound %v %.2f s), want %.0f s", out.Duration, v.Duration, hasAudio, a.Duration, seconds)
			}
			if v.Width != 192 || v.Height != 108 {
				t.Errorf("frame %dx%d, want the first clip's 192x108", v.Width, v.Height)
			}
			got := frameHashes(t, ff, final)
			if copied := slices.Equal(got, want); copied != tt.copied {
				t.Errorf("frames are the clips' own: %v, want %v (%d frames, clips give %d)", copied, tt.copied, len(got), len(want))
			}
		})
	}
}

// frameHashes is the MD5 of every decoded frame of the video at path.
func frameHashes(t *testing.T, ff ffmpeg.Runner, path string) []string {
	t.Helper()
	out := path + ".framemd5"
	if err := ff.Run(context.Background(), "-i", path, "-map", "0:v", "-f", "framemd5", out); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ",")
		hashes = append(hashes, strings.TrimSpace(fields[len(fields)-1]))
	}
	return hashes
}

// assemblingStore is a store in which every video is processing: Assemble
// claims it as finishing and reads it back after its upload, and calls
// nothing else.
type assemblingStore struct{ longform.Store }

func (assemblingStore) ClaimLongVideoFinish(context.Context, string, time.Time) error { return nil }

func (assemblingStore) GetLongVideo(_ context.Context, id string) (domain.LongVideo, error) {
	return domain.LongVideo{ID: id, Status: domain.StatusProcessing, Files: domain.StoredFiles{Finishing: true}}, nil
}

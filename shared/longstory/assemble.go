package longstory

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Output format of an assembled video: every scene segment is encoded with
// the same parameters, so the segments join by stream copy.
const (
	outputFPS        = 24
	audioRate        = 44100
	maxNarrationRate = 1.5
)

// AssembleTask is the workflow's result of both branches: the finished
// scenes (Map output, in scene order) and the narration tracks.
type AssembleTask struct {
	VideoID   string      `json:"video_id"`
	Scenes    []SceneTask `json:"scenes"`
	Narration Narration   `json:"narration"`
}

// Assemble joins the scene clips in scene_number order, each fitted to
// SceneSeconds and normalised to the first clip's frame size and 24 fps,
// lays each scene's narration under it, stores one mp4 and measures it.
func (s *Steps) Assemble(ctx context.Context, in AssembleTask) (FinalizeTask, error) {
	if len(in.Scenes) == 0 {
		return FinalizeTask{}, &SceneFailedError{Msg: "assemble: no scenes"}
	}
	dir, err := os.MkdirTemp(s.WorkDir, "assemble-")
	if err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: scratch dir: %v", err)}
	}
	defer os.RemoveAll(dir)
	scenes := append([]SceneTask(nil), in.Scenes...)
	sort.SliceStable(scenes, func(i, j int) bool { return scenes[i].Scene.SceneNumber < scenes[j].Scene.SceneNumber })
	tracks := map[int]string{}
	for _, t := range in.Narration.Tracks {
		tracks[t.SceneNumber] = t.Key
	}
	withAudio := len(tracks) > 0

	var width, height int
	var list strings.Builder
	for i, sc := range scenes {
		n := sc.Scene.SceneNumber
		clip := filepath.Join(dir, fmt.Sprintf("clip-%03d.mp4", n))
		if err := s.Files.GetFile(ctx, sc.Key, clip); err != nil {
			return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: scene %d: %v", n, err)}
		}
		info, err := s.FFmpeg.Probe(ctx, clip)
		if err != nil {
			return FinalizeTask{}, &SceneFailedError{Msg: fmt.Sprintf("scene %d: the clip is not a readable video: %v", n, err)}
		}
		v, ok := info.Video()
		if !ok || info.Duration <= 0 {
			return FinalizeTask{}, &SceneFailedError{Msg: fmt.Sprintf("scene %d: the clip has no picture", n)}
		}
		if i == 0 {
			width, height = v.Width, v.Height
		}
		speech, speechSeconds := "", 0.0
		if key, ok := tracks[n]; ok {
			speech = filepath.Join(dir, fmt.Sprintf("speech-%03d%s", n, filepath.Ext(key)))
			if err := s.Files.GetFile(ctx, key, speech); err != nil {
				return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: narration of scene %d: %v", n, err)}
			}
			a, err := s.FFmpeg.Probe(ctx, speech)
			if err != nil {
				return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: narration of scene %d: %v", n, err)}
			}
			speechSeconds = a.Duration
		}
		segment := filepath.Join(dir, fmt.Sprintf("segment-%03d.mp4", n))
		args := segmentArgs(clip, info.Duration, speech, speechSeconds, withAudio, width, height, segment)
		if err := s.FFmpeg.Run(ctx, args...); err != nil {
			return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: scene %d: %v", n, err)}
		}
		fmt.Fprintf(&list, "file '%s'\n", filepath.Base(segment))
	}
	listPath := filepath.Join(dir, "segments.txt")
	if err := os.WriteFile(listPath, []byte(list.String()), 0o600); err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: %v", err)}
	}
	final := filepath.Join(dir, "final.mp4")
	if err := s.FFmpeg.Run(ctx, "-f", "concat", "-safe", "0", "-i", listPath, "-c", "copy", "-movflags", "+faststart", final); err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: join scenes: %v", err)}
	}
	info, err := s.FFmpeg.Probe(ctx, final)
	if err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: measure: %v", err)}
	}
	key := fmt.Sprintf("long-videos/%s/final.mp4", in.VideoID)
	if err := s.Files.PutFile(ctx, key, final, "video/mp4"); err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: store: %v", err)}
	}
	duration := math.Round(info.Duration*1000) / 1000
	s.log().InfoContext(ctx, "long video assembled", "video_id", in.VideoID, "scenes", len(scenes), "seconds", duration)
	return FinalizeTask{VideoID: in.VideoID, Key: key, Duration: duration}, nil
}

// segmentArgs encodes one scene: the clip fitted to SceneSeconds (trimmed,
// or slowed when shorter), scaled and padded to width×height at 24 fps; the
// narration sped up to at most 1.5× when longer than the scene, and beyond
// that the scene's last frame held until the narration ends. It uses only
// filters of ffmpeg 4.1, the static build the Lambda layer carries.
func segmentArgs(clip string, clipSeconds float64, speech string, speechSeconds float64, withAudio bool, width, height int, out string) []string {
	scene := float64(SceneSeconds)
	tempo, length := 1.0, scene
	if speech != "" && speechSeconds > scene {
		tempo = math.Min(speechSeconds/scene, maxNarrationRate)
		length = math.Max(scene, speechSeconds/tempo)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	video := []string{}
	if clipSeconds < scene {
		video = append(video, "setpts=PTS*"+f(scene/clipSeconds))
	}
	video = append(video,
		fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=decrease", width, height),
		fmt.Sprintf("pad=%d:%d:(ow-iw)/2:(oh-ih)/2", width, height),
		"setsar=1", fmt.Sprintf("fps=%d", outputFPS), "trim=duration="+f(scene), "setpts=PTS-STARTPTS")
	if length > scene {
		// Hold the last frame: the loop filter repeats it (tpad would, but
		// the static ffmpeg of the Lambda layer predates it).
		extra := int(math.Ceil((length - scene) * outputFPS))
		video = append(video, fmt.Sprintf("loop=loop=%d:size=1:start=%d", extra, SceneSeconds*outputFPS-1), "setpts=N/FRAME_RATE/TB")
	}
	args := []string{"-i", clip}
	graph := "[0:v]" + strings.Join(video, ",") + "[v]"
	maps := []string{"-map", "[v]"}
	switch {
	case speech != "":
		args = append(args, "-i", speech)
		audio := []string{fmt.Sprintf("aformat=sample_rates=%d:channel_layouts=stereo", audioRate)}
		if tempo > 1.0001 {
			audio = append(audio, "atempo="+f(tempo))
		}
		// apad pads without end; atrim bounds it, so the run always ends.
		audio = append(audio, "apad", "atrim=duration="+f(length), "asetpts=PTS-STARTPTS")
		graph += ";[1:a]" + strings.Join(audio, ",") + "[a]"
		maps = append(maps, "-map", "[a]")
	case withAudio:
		// A scene without narration in a narrated video gets silence, so
		// that every segment has the same streams.
		args = append(args, "-f", "lavfi", "-t", f(length), "-i", fmt.Sprintf("anullsrc=r=%d:cl=stereo", audioRate))
		maps = append(maps, "-map", "1:a")
	}
	args = append(args, "-filter_complex", graph)
	args = append(args, maps...)
	args = append(args, "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-r", strconv.Itoa(outputFPS))
	if speech != "" || withAudio {
		args = append(args, "-c:a", "aac", "-b:a", "128k", "-ar", strconv.Itoa(audioRate), "-ac", "2")
	}
	return append(args, "-t", f(length), out)
}

package longform

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// AssembleStep joins the clips and the narration into the final video,
// with the music of a music_url URL fetched through music.
// It claims the video as finishing in store before it stores the final
// video, and deletes that upload (with deleter) when the video ended
// otherwise meanwhile.
func AssembleStep(files Files, store Store, deleter Deleter, ff ffmpeg.Runner, music Downloader, uploads MusicFiles, settings StepSettings) func(context.Context, AssembleTask) (FinalizeTask, error) {
	s := settings.steps()
	s.Files, s.Store, s.Deleter, s.FFmpeg, s.Downloader, s.Music = files, store, deleter, ff, music, uploads
	return s.Assemble
}

// Output format of an assembled video: every scene segment is encoded with
// the same parameters, so the segments join by stream copy. The sound is
// one voice, so it is mono: half the encoding work of stereo for the same
// result.
const (
	outputFPS        = 24
	audioRate        = 44100
	audioLayout      = "mono"
	maxNarrationRate = 1.5
)

// audioCodec encodes the narration track.
var audioCodec = []string{"-c:a", "aac", "-b:a", "96k", "-ar", strconv.Itoa(audioRate), "-ac", "1"}

// AssembleTask is the workflow's result of both branches: the finished
// scenes (Map output, in scene order) and the narration tracks.
type AssembleTask struct {
	VideoID   string      `json:"video_id"`
	Scenes    []SceneClip `json:"scenes"`
	Narration Narration   `json:"narration"`
	// Revision, when set, assembles the regenerate of that revision:
	// Scenes holds its one scene made again, and every other scene's
	// clip is reused as its state records it.
	Revision int `json:"revision,omitempty"`
}

// Assemble joins the scene clips in scene_number order, each fitted to
// SceneSeconds, lays each scene's narration under it (never making the scene
// longer), stores one mp4 of scenes × SceneSeconds and measures it. When the clips allow it (see copyPlan) the picture is joined
// by stream copy and only the narration is encoded; otherwise every scene is
// re-encoded, normalised to the first clip's frame size and 24 fps.
func (s *Steps) Assemble(ctx context.Context, in AssembleTask) (FinalizeTask, error) {
	if len(in.Scenes) == 0 {
		return FinalizeTask{}, &SceneFailedError{Msg: "assemble: no scenes"}
	}
	v, err := s.Store.GetLongVideo(ctx, in.VideoID)
	if err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: read video: %v", err)}
	}
	regenerated := 0
	if in.Revision > 0 {
		if v, in.Scenes, err = regenerateClips(v, in); err != nil {
			return FinalizeTask{}, err
		}
		regenerated = v.Regenerating.SceneNumber
	}
	dir, err := os.MkdirTemp(s.WorkDir, "assemble-")
	if err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: scratch dir: %v", err)}
	}
	defer os.RemoveAll(dir)
	scenes := append([]SceneClip(nil), in.Scenes...)
	sort.SliceStable(scenes, func(i, j int) bool { return scenes[i].SceneNumber < scenes[j].SceneNumber })
	tracks := map[int]Track{}
	for _, t := range in.Narration.Tracks {
		tracks[t.SceneNumber] = t
	}
	withAudio := len(tracks) > 0

	sources, err := s.fetchScenes(ctx, dir, scenes, tracks)
	if err != nil {
		return FinalizeTask{}, err
	}
	for i := range sources {
		sources[i].speed = 1
		if v.Studio.NarrationSpeed != nil {
			sources[i].speed = *v.Studio.NarrationSpeed
		}
	}
	for _, src := range sources {
		// Validation keeps narration within NarrationSeconds; one longer (a
		// video created before the limit, or a voice slower than its table
		// rate) loses its end rather than stretching the video.
		if src.speech != "" && src.speechSeconds > NarrationSeconds+0.05 {
			s.log().WarnContext(ctx, "narration longer than its scene at the fastest tempo; its end is cut",
				"video_id", in.VideoID, "scene", src.n, "speech_seconds", src.speechSeconds, "max_seconds", NarrationSeconds)
		}
	}
	final := filepath.Join(dir, "final.mp4")
	width, height := frame(v.Studio, sources[0].video)
	plan, copied := copyPlan(sources, width, height)
	switch {
	case v.Studio.Crossfade() && len(sources) > 1:
		copied = false
		err = s.joinByCrossfade(ctx, dir, sources, width, height, withAudio, final)
	case copied:
		err = s.joinByCopy(ctx, dir, sources, plan, withAudio, final)
	default:
		err = s.joinByEncoding(ctx, dir, sources, width, height, withAudio, final)
	}
	if err != nil {
		return FinalizeTask{}, err
	}
	if v.Studio.MusicURL != "" {
		err := s.addMusic(ctx, dir, v.UserID, v.ID, v.Studio, final, float64(len(sources)*SceneSeconds), withAudio)
		var bad *SceneFailedError
		switch {
		case errors.As(err, &bad):
			// The music was read as audio at create; a URL that no longer
			// serves it is its owner's change. The scenes are made and
			// paid for upstream, so the video is finished without it
			// rather than failed (and refunded) for it.
			s.log().WarnContext(ctx, "music left out: it is no longer audio", "video_id", v.ID, "error", bad.Msg)
		case err != nil:
			return FinalizeTask{}, err
		}
	}
	var captions string
	if v.Studio.CaptionsFile() && withAudio {
		var cues []cue
		if captions, cues, err = s.writeCaptions(ctx, dir, v, sources); err != nil {
			return FinalizeTask{}, err
		}
		if v.Studio.Captions == domain.CaptionsBurned {
			if err := s.burnCaptions(ctx, dir, final, v.LanguageCode, cues, width, height); err != nil {
				return FinalizeTask{}, err
			}
		}
	}
	info, err := s.FFmpeg.Probe(ctx, final)
	if err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: measure: %v", err)}
	}
	key, captionsKey := media.FinalVideoKeyAt(in.VideoID, in.Revision), media.CaptionsKeyAt(in.VideoID, in.Revision)
	if in.Revision == 0 {
		if err := s.claimFinish(ctx, in.VideoID); err != nil {
			return FinalizeTask{}, err
		}
	}
	if err := s.Files.PutFile(ctx, key, final, "video/mp4"); err != nil {
		return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: store: %v", err)}
	}
	stored := []string{key}
	if captions != "" {
		if err := s.Files.PutFile(ctx, captionsKey, captions, "text/vtt"); err != nil {
			return FinalizeTask{}, &TransientError{Msg: fmt.Sprintf("assemble: store the captions: %v", err)}
		}
		stored = append(stored, captionsKey)
	}
	// A regenerate's files are under its revision's keys, which nothing
	// serves until Finalize records them (and deletes them if it ended).
	if in.Revision == 0 {
		if err := s.dropLateUpload(ctx, in.VideoID, stored); err != nil {
			return FinalizeTask{}, err
		}
	}
	duration := math.Round(info.Duration*1000) / 1000
	s.log().InfoContext(ctx, "long video assembled", "video_id", in.VideoID, "scenes", len(scenes), "seconds", duration, "stream_copy", copied,
		"revision", in.Revision)
	return FinalizeTask{VideoID: in.VideoID, Key: key, Duration: duration, Revision: in.Revision, SceneNumber: regenerated}, nil
}

// claimFinish claims the video as finishing before its final video is
// stored, in one conditional write that a cancel's cannot pass: a video
// canceled (or failed) first gets no final video, and one claimed ends
// completed and charged, or failed with the final video deleted
// (MarkFailed).
func (s *Steps) claimFinish(ctx context.Context, videoID string) error {
	err := s.Store.ClaimLongVideoFinish(ctx, videoID, s.now())
	if err == nil {
		return nil
	}
	if !errors.Is(err, domain.ErrConflict) {
		return &TransientError{Msg: fmt.Sprintf("assemble: claim %s as finishing: %v", videoID, err)}
	}
	status := "final"
	if v, rerr := s.Store.GetLongVideo(ctx, videoID); rerr == nil {
		status = string(v.Status)
	}
	return &SceneFailedError{Msg: fmt.Sprintf("assemble stopped: the video is %s; its final video is not stored", status)}
}

// dropLateUpload reads the video after its final video (and captions) were
// stored and deletes those uploads (keys) when the video ended otherwise than completed with
// its files kept: an Assemble that ran past its task's timeout stores
// after MarkFailed or a delete of the outputs listed what to delete.
func (s *Steps) dropLateUpload(ctx context.Context, videoID string, keys []string) error {
	v, err := s.Store.GetLongVideo(ctx, videoID)
	if err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: reread %s: %v", videoID, err)}
	}
	if v.Status == domain.StatusProcessing || v.Status == domain.StatusCompleted && v.Files.Removal == domain.RemovalNone {
		return nil
	}
	if err := s.Deleter.Delete(ctx, keys); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: delete the late upload of %s: %v", videoID, err)}
	}
	return &SceneFailedError{Msg: fmt.Sprintf("assemble stopped: the video is %s; its final video is not kept", v.Status)}
}

// writeCaptions writes the video's webVTT captions into dir, each scene's
// cue timed from its own narration track, and answers the file's path and
// the cues.
func (s *Steps) writeCaptions(ctx context.Context, dir string, v domain.LongVideo, sources []sceneSource) (string, []cue, error) {
	spans, err := s.speechSpans(ctx, sources)
	if err != nil {
		return "", nil, err
	}
	starts := make([]float64, len(sources))
	for i := range sources {
		starts[i] = float64(i * SceneSeconds)
	}
	path := filepath.Join(dir, "captions.vtt")
	list := cues(v, sources, starts, spans)
	if err := os.WriteFile(path, webVTT(list), 0o600); err != nil {
		return "", nil, &TransientError{Msg: fmt.Sprintf("assemble: captions: %v", err)}
	}
	return path, list, nil
}

// sceneSource is one scene's clip and narration in the scratch directory.
type sceneSource struct {
	n           int
	clip        string
	clipSeconds float64
	video       ffmpeg.Stream
	// speech is "" for a scene without narration.
	speech        string
	speechSeconds float64
	// marks are the narration's speech marks (nil: timed from its sound).
	marks []SpeechMark
	// speed is the video's narration_speed (1 by default).
	speed float64
}

// fetchParallel bounds the downloads and probes running at once.
const fetchParallel = 4

// fetchScenes downloads and probes every clip and narration track, a few at
// a time; the first failure in scene order is the error.
func (s *Steps) fetchScenes(ctx context.Context, dir string, scenes []SceneClip, tracks map[int]Track) ([]sceneSource, error) {
	sources := make([]sceneSource, len(scenes))
	errs := make([]error, len(scenes))
	panics := make([]any, len(scenes))
	slots := make(chan struct{}, fetchParallel)
	var wg sync.WaitGroup
	for i, sc := range scenes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A panic belongs to the step, not to this helper goroutine:
			// it is raised again on the step's own goroutine below.
			defer func() { panics[i] = recover() }()
			slots <- struct{}{}
			defer func() { <-slots }()
			sources[i], errs[i] = s.fetchScene(ctx, dir, sc, tracks[sc.SceneNumber])
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return sources, nil
}

func (s *Steps) fetchScene(ctx context.Context, dir string, sc SceneClip, track Track) (sceneSource, error) {
	n := sc.SceneNumber
	src := sceneSource{n: n, clip: filepath.Join(dir, fmt.Sprintf("clip-%03d.mp4", n))}
	if err := s.Files.GetFile(ctx, sc.Key, src.clip); err != nil {
		return src, &TransientError{Msg: fmt.Sprintf("assemble: scene %d: %v", n, err)}
	}
	info, err := s.FFmpeg.Probe(ctx, src.clip)
	if err != nil {
		return src, &SceneFailedError{Msg: fmt.Sprintf("scene %d: the clip is not a readable video: %v", n, err)}
	}
	v, ok := info.Video()
	if !ok || info.Duration <= 0 {
		return src, &SceneFailedError{Msg: fmt.Sprintf("scene %d: the clip has no picture", n)}
	}
	src.video, src.clipSeconds = v, info.Duration
	if track.Key == "" {
		return src, nil
	}
	src.speech = filepath.Join(dir, fmt.Sprintf("speech-%03d%s", n, filepath.Ext(track.Key)))
	if err := s.Files.GetFile(ctx, track.Key, src.speech); err != nil {
		return src, &TransientError{Msg: fmt.Sprintf("assemble: narration of scene %d: %v", n, err)}
	}
	a, err := s.FFmpeg.Probe(ctx, src.speech)
	if err != nil {
		return src, &TransientError{Msg: fmt.Sprintf("assemble: narration of scene %d: %v", n, err)}
	}
	src.speechSeconds = a.Duration
	if track.MarksKey == "" {
		return src, nil
	}
	marks := filepath.Join(dir, fmt.Sprintf("speech-%03d.marks", n))
	if err := s.Files.GetFile(ctx, track.MarksKey, marks); err != nil {
		return src, &TransientError{Msg: fmt.Sprintf("assemble: speech marks of scene %d: %v", n, err)}
	}
	f, err := os.Open(marks)
	if err != nil {
		return src, &TransientError{Msg: fmt.Sprintf("assemble: speech marks of scene %d: %v", n, err)}
	}
	defer f.Close()
	if src.marks, err = ParseSpeechMarks(f); err != nil {
		return src, &TransientError{Msg: fmt.Sprintf("assemble: speech marks of scene %d: %v", n, err)}
	}
	return src, nil
}

// joinByEncoding encodes every scene's picture into a segment of
// width×height with the same parameters, then joins the segments by stream copy and encodes the
// narration as one track, as joinByCopy does: per-segment AAC tracks would
// each end on a whole packet and make the video longer than its scenes.
func (s *Steps) joinByEncoding(ctx context.Context, dir string, sources []sceneSource, width, height int, withAudio bool, final string) error {
	var list strings.Builder
	for _, src := range sources {
		segment := filepath.Join(dir, fmt.Sprintf("segment-%03d.mp4", src.n))
		if err := s.FFmpeg.Run(ctx, segmentArgs(src.clip, src.clipSeconds, SceneSeconds, width, height, segment)...); err != nil {
			return &TransientError{Msg: fmt.Sprintf("assemble: scene %d: %v", src.n, err)}
		}
		fmt.Fprintf(&list, "file '%s'\n", filepath.Base(segment))
	}
	listPath := filepath.Join(dir, "segments.txt")
	if err := os.WriteFile(listPath, []byte(list.String()), 0o600); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: %v", err)}
	}
	args := append([]string{"-f", "concat", "-safe", "0", "-i", listPath}, withNarration(sources, withAudio)...)
	if err := s.FFmpeg.Run(ctx, append(args, "-movflags", "+faststart", final)...); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: join scenes: %v", err)}
	}
	return nil
}

// copyJoin says how the clips join by stream copy: each clip's span (its
// first span seconds, cut where the clip is longer than a scene) and one
// timestamp scale for all, which fits every span to SceneSeconds.
type copyJoin struct {
	spans []float64
	cut   []bool
	scale float64
}

// copyPlan says whether the clips can be joined by stream copy into a
// width×height video, and how.
// They can when every clip is H.264 of that frame size with the same pixel format,
// frame rate and SPS/PPS (the scenes of one video come from one model, so
// they usually are), and the clips' spans are equal to within half a frame,
// so that one
// timestamp scale fits them all: a shorter clip is slowed down by stretching
// its timestamps (as the encoding path does with setpts), a longer one is
// cut at SceneSeconds — only when it has no B-frames, where the cut falls
// exactly between frames.
func copyPlan(sources []sceneSource, width, height int) (copyJoin, bool) {
	first := sources[0].video
	if first.Width != width || first.Height != height || first.Codec != "h264" || first.ExtradataHash == "" || first.FPS <= 0 {
		return copyJoin{}, false
	}
	scene := float64(SceneSeconds)
	halfFrame := 0.5 / first.FPS
	plan := copyJoin{}
	lo, hi, total := math.Inf(1), math.Inf(-1), 0.0
	for _, src := range sources {
		v := src.video
		if v.Codec != first.Codec || v.Width != first.Width || v.Height != first.Height || v.PixFmt != first.PixFmt ||
			math.Abs(v.FPS-first.FPS) > 1e-6 || v.ExtradataHash != first.ExtradataHash {
			return copyJoin{}, false
		}
		span := v.Duration
		if span <= 0 {
			span = src.clipSeconds
		}
		cut := span > scene+halfFrame
		if cut {
			if v.HasBFrames != 0 {
				return copyJoin{}, false
			}
			span = scene
		}
		plan.spans, plan.cut = append(plan.spans, span), append(plan.cut, cut)
		lo, hi, total = math.Min(lo, span), math.Max(hi, span), total+span
	}
	if hi-lo > halfFrame {
		return copyJoin{}, false
	}
	plan.scale = scene * float64(len(sources)) / total
	return plan, true
}

// joinByCopy joins the clips' pictures by stream copy through the concat
// demuxer, stretched by one timestamp scale (-itsscale), and encodes only
// the narration (withNarration). Options and filters all exist in ffmpeg 4.1.
func (s *Steps) joinByCopy(ctx context.Context, dir string, sources []sceneSource, plan copyJoin, withAudio bool, final string) error {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
	var list strings.Builder
	for i, src := range sources {
		// duration places the next clip right after this one's span;
		// outpoint drops the packets past a cut.
		fmt.Fprintf(&list, "file '%s'\nduration %s\n", filepath.Base(src.clip), f(plan.spans[i]))
		if plan.cut[i] {
			fmt.Fprintf(&list, "outpoint %s\n", f(plan.spans[i]))
		}
	}
	listPath := filepath.Join(dir, "clips.txt")
	if err := os.WriteFile(listPath, []byte(list.String()), 0o600); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: %v", err)}
	}
	args := []string{"-itsscale", f(plan.scale), "-f", "concat", "-safe", "0", "-i", listPath}
	args = append(args, withNarration(sources, withAudio)...)
	args = append(args, "-movflags", "+faststart", final)
	if err := s.FFmpeg.Run(ctx, args...); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: join scenes: %v", err)}
	}
	return nil
}

// withNarration is the rest of a join's arguments after its input 0 (the
// joined pictures): the picture copied and, in a narrated video, one mono AAC
// track of every scene's narration fitted to SceneSeconds, silence for a
// scene without one. Options and filters all exist in ffmpeg 4.1.
func withNarration(sources []sceneSource, withAudio bool) []string {
	maps := []string{"-map", "0:v", "-c:v", "copy"}
	if !withAudio {
		return maps
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
	var args, graph []string
	var labels strings.Builder
	input := 1
	for i, src := range sources {
		label := fmt.Sprintf("[a%d]", i)
		labels.WriteString(label)
		if src.speech == "" {
			graph = append(graph, fmt.Sprintf("anullsrc=r=%d:cl=%s,atrim=duration=%s", audioRate, audioLayout, f(SceneSeconds))+label)
			continue
		}
		args = append(args, "-i", src.speech)
		graph = append(graph, fmt.Sprintf("[%d:a]", input)+strings.Join(narrationFilters(narrationTempo(src.speechSeconds, src.speed)), ",")+label)
		input++
	}
	graph = append(graph, fmt.Sprintf("%sconcat=n=%d:v=0:a=1[a]", labels.String(), len(sources)))
	args = append(args, "-filter_complex", strings.Join(graph, ";"))
	return append(append(append(args, maps...), "-map", "[a]"), audioCodec...)
}

// narrationTempo is the tempo a narration is laid at: the video's
// narration_speed (1 by default) when it fits its scene at it, else sped
// up to SceneSeconds but at most maxNarrationRate, past which speech is
// hard to follow. The scene never grows: what still does not fit is cut
// (validation keeps narration within NarrationSeconds, whatever the
// speed).
func narrationTempo(speechSeconds, speed float64) float64 {
	return math.Min(math.Max(speechSeconds/SceneSeconds, speed), maxNarrationRate)
}

// narrationFilters fit one narration track to exactly SceneSeconds at tempo.
func narrationFilters(tempo float64) []string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	audio := []string{fmt.Sprintf("aformat=sample_rates=%d:channel_layouts=%s", audioRate, audioLayout)}
	if math.Abs(tempo-1) > 0.0001 {
		audio = append(audio, "atempo="+f(tempo))
	}
	// apad pads without end; atrim bounds it, so the run always ends.
	return append(audio, "apad", "atrim=duration="+f(SceneSeconds), "asetpts=PTS-STARTPTS")
}

// segmentArgs encodes one scene's picture, exactly length seconds long
// (SceneSeconds, or more for a scene that a crossfade extends): the clip
// fitted to it (trimmed, or slowed when shorter), scaled and padded to
// width×height at 24 fps. The narration is laid under the joined segments
// (withNarration). It uses only filters of ffmpeg 4.1, the static build the
// Lambda layer carries.
func segmentArgs(clip string, clipSeconds, length float64, width, height int, out string) []string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	video := []string{}
	if clipSeconds < length {
		video = append(video, "setpts=PTS*"+f(length/clipSeconds))
	}
	video = append(video,
		fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=decrease", width, height),
		fmt.Sprintf("pad=%d:%d:(ow-iw)/2:(oh-ih)/2", width, height),
		"setsar=1", fmt.Sprintf("fps=%d", outputFPS), "trim=duration="+f(length), "setpts=PTS-STARTPTS")
	return []string{"-i", clip, "-filter_complex", "[0:v]" + strings.Join(video, ",") + "[v]", "-map", "[v]",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-r", strconv.Itoa(outputFPS), "-t", f(length), out}
}

// regenerateClips is what a regenerate's Assemble joins: v with the
// regenerated scene's new texts (its captions follow them) and every
// scene's clip, the one made again from in.Scenes and the others' as their
// states record them (sceneClipBase of the revision that made each). A
// regenerate no longer running stops the step.
func regenerateClips(v domain.LongVideo, in AssembleTask) (domain.LongVideo, []SceneClip, error) {
	r := v.Regenerating
	if v.Status != domain.StatusCompleted || r == nil || r.Revision != in.Revision {
		return v, nil, &SceneFailedError{Msg: fmt.Sprintf("assemble stopped: the regenerate (revision %d) no longer runs", in.Revision)}
	}
	made := map[int]string{}
	for _, c := range in.Scenes {
		made[c.SceneNumber] = c.Key
	}
	if _, ok := made[r.SceneNumber]; !ok || len(in.Scenes) != 1 {
		return v, nil, &SceneFailedError{Msg: fmt.Sprintf("assemble: the regenerate of scene %d got clips %v", r.SceneNumber, in.Scenes)}
	}
	v.Scenes = r.Applied(v.Scenes)
	clips := make([]SceneClip, 0, len(v.Scenes))
	for _, sc := range v.Scenes {
		key, ok := made[sc.SceneNumber]
		if !ok {
			key = sceneClipBase(v.ID, sc.SceneNumber, v.SceneStatus[sc.SceneNumber].Revision) + ".mp4"
		}
		clips = append(clips, SceneClip{SceneNumber: sc.SceneNumber, Key: key})
	}
	return v, clips, nil
}

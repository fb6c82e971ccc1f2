package lambdawiring

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
	"github.com/mediagen-dev/mediagen/internal/aws/narration"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/aws/workflow"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// envCaptionFontDir is the directory of the font files the Assemble
// function draws burned captions in (longform.CaptionFonts).
const envCaptionFontDir = "CAPTION_FONT_DIR"

// envStateMachineARN names the long-form state machine.
const envStateMachineARN = "STATE_MACHINE_ARN"

// longStoryWorkflow is the long-form state machine, for the routes that
// start and stop its executions.
func longStoryWorkflow(cfg aws.Config) (*workflow.StepFunctions, error) {
	arn, err := storewiring.Required(envStateMachineARN)
	if err != nil {
		return nil, err
	}
	return &workflow.StepFunctions{Client: sfn.NewFromConfig(cfg), StateMachineARN: arn}, nil
}

// stepSettings are the task steps' settings in Lambda: scratch files in
// /tmp.
func stepSettings(log *slog.Logger) longform.StepSettings {
	return longform.StepSettings{WorkDir: os.TempDir(), Log: log}
}

func stepBucket(cfg aws.Config) (*s3bucket.Bucket, error) {
	name, err := storewiring.Required(envOutputBucket)
	if err != nil {
		return nil, err
	}
	base, err := storewiring.Required(envMediaBaseURL)
	if err != nil {
		return nil, err
	}
	return s3bucket.New(s3.NewFromConfig(cfg), name, base), nil
}

// SubmitScene is the workflow's Scene task: it creates a scene's job.
func SubmitScene(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := storewiring.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	ups, err := upstreams(ctx, cfg)
	if err != nil {
		return nil, err
	}
	q, err := pollQueue(cfg)
	if err != nil {
		return nil, err
	}
	st := storewiring.Store(cfg)
	return longform.SubmitSceneStep(st, ups, st, q, stepSettings(log)), nil
}

// Narrate speaks the narration with Amazon Polly.
func Narrate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, files, err := configAndBucket(ctx)
	if err != nil {
		return nil, err
	}
	return longform.NarrateStep(files, narration.Polly{Client: polly.NewFromConfig(cfg)}, storewiring.Store(cfg), stepSettings(log)), nil
}

// Assemble joins the clips and narration with the ffmpeg layer.
func Assemble(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, files, err := configAndBucket(ctx)
	if err != nil {
		return nil, err
	}
	settings := stepSettings(log)
	// The layer's fonts (template.yaml); unset is Debian's font
	// directories.
	if d := storewiring.Getenv(envCaptionFontDir); d != "" {
		settings.CaptionFontDirs = []string{d}
	}
	return longform.AssembleStep(files, storewiring.Store(cfg), files, ffmpeg.Runner{Timeout: 10 * time.Minute}, musicDownloader(5*time.Minute),
		&media.FileInputs{Objects: files}, settings), nil
}

// Finalize completes the video, tags its files with a retention other than
// the default, and sends its webhook.
func Finalize(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, files, err := configAndBucket(ctx)
	if err != nil {
		return nil, err
	}
	notifier, err := notifier(cfg)
	if err != nil {
		return nil, err
	}
	// What a regenerate replaced leaves the CDN's caches as it is deleted.
	deleter := media.UncachingDeleter{Objects: files, CDN: outputCDN(cfg), Log: log}
	return longform.FinalizeStep(files, files, storewiring.Store(cfg), notifier, deleter, stepSettings(log)), nil
}

// MarkFailed is the workflow's Catch and the safety-net rule's target: it
// also stops the scenes' jobs and frees their slots.
func MarkFailed(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, files, err := configAndBucket(ctx)
	if err != nil {
		return nil, err
	}
	notifier, err := notifier(cfg)
	if err != nil {
		return nil, err
	}
	ups, err := upstreams(ctx, cfg)
	if err != nil {
		return nil, err
	}
	st := storewiring.Store(cfg)
	return longform.MarkFailedStep(st, notifier, ups, st, files, stepSettings(log)), nil
}

// configAndBucket are what the steps that read and write files start from.
func configAndBucket(ctx context.Context) (aws.Config, *s3bucket.Bucket, error) {
	cfg, err := storewiring.AWSConfig(ctx)
	if err != nil {
		return aws.Config{}, nil, err
	}
	files, err := stepBucket(cfg)
	return cfg, files, err
}

// LongStoryVoices lists a language's voices; a voice's preview clip is
// spoken by Amazon Polly the first time it is listed and kept in the
// output bucket.
func LongStoryVoices(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, files, err := configAndBucket(ctx)
	if err != nil {
		return nil, err
	}
	lister := &longform.VoiceLister{Narrator: narration.Polly{Client: polly.NewFromConfig(cfg)}, Files: files, WorkDir: os.TempDir(), Log: log}
	return storewiring.Route(routes.LongStoryVoices(), routes.Ports{VoiceLister: lister, Gate: storewiring.Gate(cfg, log)})
}

// musicDownloader fetches a music_url given as a URL through the egress
// guard (public https hosts only), at most longform.MaxMusicURLBytes,
// each try bounded by timeout.
func musicDownloader(timeout time.Duration) *media.Downloader {
	return &media.Downloader{HTTP: &http.Client{Timeout: timeout}, MaxBytes: longform.MaxMusicURLBytes}
}

// musicCheck fetches and probes (ffprobe from the ffmpeg layer,
// FFPROBE_PATH) a music_url given as a URL or an uploaded file (copied in
// the output bucket, OUTPUT_BUCKET, from uploads/ to the video's key under
// inputs/, which Assemble reads, and read there) at create, within the
// route's time.
func musicCheck(cfg aws.Config) (*longform.MusicCheck, error) {
	bucket, err := storewiring.Required(envOutputBucket)
	if err != nil {
		return nil, err
	}
	return &longform.MusicCheck{Fetch: musicDownloader(15 * time.Second), Files: &media.FileInputs{Objects: s3bucket.New(s3.NewFromConfig(cfg), bucket, "")},
		FFmpeg: ffmpeg.Runner{Timeout: 10 * time.Second}, WorkDir: os.TempDir()}, nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mediagen-dev/mediagen/client"
)

// Environment variables the client commands read; flags override them.
const (
	envBaseURL = "MEDIAGEN_BASE_URL"
	envAPIKey  = "MEDIAGEN_API_KEY"
	// envStreamURL is where the progress streams are: a deployment's
	// StreamUrl output (its HTTP API cannot stream); default the base URL.
	envStreamURL = "MEDIAGEN_STREAM_URL"
)

// clientCommands call a running service over HTTP, as any user of the API.
var clientCommands = map[string]command{
	"generate":            generateCmd,
	"status":              statusCmd,
	"models":              modelsCmd,
	"story create":        storyCreateCmd,
	"story estimate":      storyEstimateCmd,
	"story status":        storyStatusCmd,
	"story voices":        storyVoicesCmd,
	"transactions":        transactionsCmd,
	"usage":               usageCmd,
	"delete-output":       deleteOutputCmd,
	"story delete-output": storyDeleteOutputCmd,
	"story regenerate":    storyRegenerateCmd,
	// The key routes (keyscmds.go): named after their path, so they do not
	// clash with the admin commands keys create and keys revoke.
	"account keys list":   accountKeysListCmd,
	"account keys create": accountKeysCreateCmd,
	"account keys revoke": accountKeysRevokeCmd,
	// POST /api/account/webhook-secret/rotate (keyscmds.go).
	"account webhook-secret rotate": accountWebhookSecretRotateCmd,
}

// clientCommand finds the client command args start with (its name is one
// to three words) and the arguments after its name.
func clientCommand(args []string) (command, []string, bool) {
	for n := min(len(args), 3); n >= 1; n-- {
		if cmd, ok := clientCommands[strings.Join(args[:n], " ")]; ok {
			return cmd, args[n:], true
		}
	}
	return nil, nil, false
}

// apiFlags are the connection flags of every client command.
type apiFlags struct {
	baseURL, apiKey, streamURL string
	jsonOut                    bool
}

func (f *apiFlags) register(fs *flag.FlagSet) {
	base := os.Getenv(envBaseURL)
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	fs.StringVar(&f.baseURL, "base-url", base, "the service's URL (default $"+envBaseURL+")")
	// The key is read from the environment after parsing, so that -h does
	// not print it as the flag's default.
	fs.StringVar(&f.apiKey, "api-key", "", "API key (default $"+envAPIKey+")")
	fs.BoolVar(&f.jsonOut, "json", false, "print the service's answers as JSON lines")
	fs.StringVar(&f.streamURL, "stream-url", os.Getenv(envStreamURL),
		"where the progress streams are: a deployment's StreamUrl output (default $"+envStreamURL+", else the base URL)")
}

func (f *apiFlags) client() *client.Client {
	key := f.apiKey
	if key == "" {
		key = os.Getenv(envAPIKey)
	}
	c := client.New(f.baseURL, key)
	c.StreamURL = f.streamURL
	return c
}

// parseArgs parses flags that may come before or after the positional
// arguments (mediagen status ID --json) and returns the positionals.
func parseArgs(fs *flag.FlagSet, args []string, positionals int) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && i+1 < len(args) {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	if err := parse(fs, flags); err != nil {
		return nil, err
	}
	if len(pos) != positionals {
		return nil, fmt.Errorf("want %d argument(s), got %d: %q", positionals, len(pos), pos)
	}
	return pos, nil
}

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// apiFail prints an error of the service (the envelope's message and
// every bad field) or of the connection, and returns the exit code.
func apiFail(stderr io.Writer, name string, err error) int {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Fprintf(stderr, "mediagen %s: %s\n", name, apiErr.Message)
		for _, d := range apiErr.Details {
			fmt.Fprintf(stderr, "  %s: %s\n", d.Field, d.Message)
		}
		if apiErr.RetryAfter > 0 {
			fmt.Fprintf(stderr, "  retry after %s\n", apiErr.RetryAfter)
		}
		// The create wrote a record before it failed: name it, so that it
		// can be told apart in the list.
		if apiErr.GenerationID != "" {
			fmt.Fprintf(stderr, "  generation %s (failed, nothing charged)\n", apiErr.GenerationID)
		}
		if apiErr.VideoID != "" {
			fmt.Fprintf(stderr, "  video %s (failed, nothing charged)\n", apiErr.VideoID)
		}
		return exitError
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "mediagen %s: stopped\n", name)
		return exitError
	}
	return fail(stderr, exitError, fmt.Errorf("%s: %w", name, err))
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// usageFail reports a bad command line.
func usageFail(stderr io.Writer, name string, err error) int {
	if errors.Is(err, errHelp) {
		return exitOK
	}
	return fail(stderr, exitUsage, fmt.Errorf("%s: %w", name, err))
}

func generateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	var inputs repeated
	model := fs.String("model", "", "provider, e.g. provider-a (see mediagen models)")
	version := fs.String("version", "", "model_version, e.g. theta-4-fast")
	fs.Var(&inputs, "input", "an input field as key=value (repeatable); key=@FILE uploads a local image (POST /api/files) and sends its file URL")
	count := fs.Int("image-count", 0, "number of images, 1-4 (image variants)")
	wait := fs.Bool("wait", false, "wait until the generation is final, then download its outputs")
	out := fs.String("out", "", "directory for the outputs (implies --wait; default: the current directory)")
	deadline := fs.Int("deadline", 0, "seconds after which the generation, if not done, is canceled and not charged (1-86400)")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "generate", err)
	}
	if *model == "" || *version == "" {
		return usageFail(stderr, "generate", errors.New("--model and --version are required (mediagen models lists them)"))
	}
	c := af.client()
	// The variant from the catalog: its fields' types for the inputs, its
	// typical duration for the time left while waiting. Without it (the
	// catalog unreachable) the service says what is wrong with the values.
	var variant client.Model
	if models, err := c.Models(ctx); err == nil {
		for _, m := range models {
			if m.Model == *model && m.Version == *version {
				variant = m
			}
		}
	}
	input, err := buildInput(ctx, c, variant, inputs)
	if err != nil {
		return usageFail(stderr, "generate", err)
	}
	req := client.GenerateRequest{Model: *model, ModelVersion: *version, Input: input, ImageCount: *count, DeadlineSeconds: *deadline}
	waits := *wait || *out != ""
	var p *progress
	var g client.Generation
	if waits {
		// Prefer: wait first: a job done within the wait (an image, most
		// often) is answered completed, with its outputs, in one request.
		p = newProgress(stderr, "waiting for the answer (Prefer: wait)")
		g, err = c.GenerateAndWait(ctx, req, client.MaxWait)
	} else {
		g, err = c.Generate(ctx, req)
	}
	if err != nil {
		if p != nil {
			p.Done("refused")
		}
		return apiFail(stderr, "generate", err)
	}
	if af.jsonOut {
		printJSON(stdout, g)
	} else if client.Final(g.Status) {
		fmt.Fprintf(stdout, "generation %s (id %d): %s, %s credits\n", g.UUID, g.ID, g.Status, g.CreditsUsed)
	} else {
		fmt.Fprintf(stdout, "generation %s (id %d): %s, %s credits held\n", g.UUID, g.ID, g.Status, g.CreditsUsed)
	}
	if !waits {
		return exitOK
	}
	return waitGeneration(ctx, c, af, p, g.UUID, time.Duration(variant.TypicalSeconds)*time.Second, *out, stdout, stderr)
}

// waitGeneration follows a generation with a progress display (its event
// stream, or by polling where the service has none), then downloads its
// outputs. typical is how long a job of its variant usually takes (0 =
// unknown); p, when not nil, is the display already showing.
func waitGeneration(ctx context.Context, c *client.Client, af apiFlags, p *progress, id string, typical time.Duration, out string, stdout, stderr io.Writer) int {
	if out == "" {
		out = "."
	}
	if p == nil {
		p = newProgress(stderr, "processing")
	}
	st, err := c.FollowGeneration(ctx, id, client.WaitOptions{Interval: 500 * time.Millisecond, MaxInterval: 5 * time.Second},
		func(s client.GenerationStatus) {
			if !client.Final(s.Status) { // Done writes the final state, once
				p.Update(generationLine(s, p.Elapsed(), typical), float64(s.Progress))
			}
		})
	if err != nil {
		p.Done("stopped waiting; the generation goes on: mediagen status " + id)
		return apiFail(stderr, "generate", err)
	}
	p.Done(st.Status)
	if af.jsonOut {
		printJSON(stdout, st)
	}
	if st.Status != client.StatusCompleted {
		fmt.Fprintf(stderr, "mediagen generate: %s: %s\n", st.Status, st.Error)
		return exitError
	}
	for i, u := range st.Output {
		path, err := c.DownloadFile(ctx, u, out, fmt.Sprintf("%s-%d", id, i))
		if err != nil {
			return apiFail(stderr, "generate", err)
		}
		if !af.jsonOut {
			fmt.Fprintln(stdout, path)
		}
	}
	return exitOK
}

// buildInput turns key=value pairs into an input object, typed by the
// variant's input schema: booleans as true/false, image lists split on
// commas, @FILE uploaded (its file URL); everything else is a string, as the API
// wants enum values.
func buildInput(ctx context.Context, c *client.Client, variant client.Model, pairs []string) (map[string]any, error) {
	types := map[string]string{}
	fields, _ := variant.Fields() // none for an unknown variant: the service will say what is wrong
	for _, f := range fields {
		types[f.Name] = f.Type
	}
	input := map[string]any{}
	for _, pair := range pairs {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("--input %q: want key=value", pair)
		}
		switch types[key] {
		case "boolean":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return nil, fmt.Errorf("--input %s: want true or false, got %q", key, value)
			}
			input[key] = b
		case "image_list":
			var list []any
			for _, item := range strings.Split(value, ",") {
				ref, err := imageRef(ctx, c, strings.TrimSpace(item))
				if err != nil {
					return nil, fmt.Errorf("--input %s: %w", key, err)
				}
				list = append(list, ref)
			}
			input[key] = list
		default:
			ref, err := imageRef(ctx, c, value)
			if err != nil {
				return nil, fmt.Errorf("--input %s: %w", key, err)
			}
			input[key] = ref
		}
	}
	return input, nil
}

// imageRef uploads @FILE (client.Upload) and answers the file's URL,
// mediagen://files/<file_id>, which any image field takes; other values
// are returned as they are.
func imageRef(ctx context.Context, c *client.Client, value string) (string, error) {
	path, ok := strings.CutPrefix(value, "@")
	if !ok {
		return value, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := c.Upload(ctx, raw, "")
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", path, err)
	}
	return f.URL, nil
}

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return usageFail(stderr, "status ID", err)
	}
	c := af.client()
	st, err := c.Generation(ctx, pos[0])
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		// Perhaps a long-form video's id.
		if v, verr := c.LongVideo(ctx, pos[0]); verr == nil {
			return printLongVideo(stdout, af, v)
		}
	}
	if err != nil {
		return apiFail(stderr, "status", err)
	}
	if af.jsonOut {
		printJSON(stdout, st)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nstatus\t%s\nmodel\t%s\ncreated_at\t%s\nprogress\t%d%%\n", st.ID, st.Status, st.Model, st.CreatedAt, st.Progress)
	for _, u := range st.Output {
		fmt.Fprintf(tw, "output\t%s\n", u)
	}
	printFiles(tw, st.OutputFiles)
	if st.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", st.Error)
	}
	tw.Flush()
	return exitOK
}

// printFiles says when the outputs expire, or that they are gone.
func printFiles(w io.Writer, f client.OutputFiles) {
	if f.OutputExpiresAt != "" && !f.DataRemoved {
		fmt.Fprintf(w, "expires_at\t%s\n", f.OutputExpiresAt)
	}
	if f.DataRemoved {
		fmt.Fprintf(w, "data_removed\ttrue (the files are deleted)\n")
	}
}

// deleteOutputCmd deletes a generation's stored files, or a long video's
// when the id is one (as status finds either).
func deleteOutputCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("delete-output", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return usageFail(stderr, "delete-output ID", err)
	}
	c := af.client()
	st, err := c.DeleteGenerationOutput(ctx, pos[0])
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		if v, verr := c.DeleteLongVideoOutput(ctx, pos[0]); verr == nil {
			return printLongVideo(stdout, af, v)
		}
	}
	if err != nil {
		return apiFail(stderr, "delete-output", err)
	}
	if af.jsonOut {
		printJSON(stdout, st)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: the outputs are deleted\n", st.ID)
	return exitOK
}

func storyDeleteOutputCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("story delete-output", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return usageFail(stderr, "story delete-output ID", err)
	}
	v, err := af.client().DeleteLongVideoOutput(ctx, pos[0])
	if err != nil {
		return apiFail(stderr, "story delete-output", err)
	}
	return printLongVideo(stdout, af, v)
}

func printLongVideo(stdout io.Writer, af apiFlags, v client.LongVideoStatus) int {
	if af.jsonOut {
		printJSON(stdout, v)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nstatus\t%s\nprogress\t%d%%\n", v.ID, v.Status, v.Progress)
	for _, s := range v.Scenes {
		fmt.Fprintf(tw, "scene %d\t%s\n", s.SceneNumber, s.Status)
	}
	if v.FinalVideoURL != "" {
		fmt.Fprintf(tw, "final_video_url\t%s\ntotal_duration\t%.1f s\n", v.FinalVideoURL, v.TotalDuration)
	}
	if v.Revision > 1 || v.Regenerating != nil {
		fmt.Fprintf(tw, "revision\t%d\n", v.Revision)
	}
	if r := v.Regenerating; r != nil {
		fmt.Fprintf(tw, "regenerating\tscene %d to revision %d\n", r.SceneNumber, r.Revision)
	}
	if v.CaptionsURL != "" {
		fmt.Fprintf(tw, "captions_url\t%s\n", v.CaptionsURL)
	}
	printStudio(tw, v.Studio)
	printFiles(tw, v.OutputFiles)
	if v.Error != nil {
		fmt.Fprintf(tw, "error\t%s\n", *v.Error)
	}
	tw.Flush()
	return exitOK
}

// printStudio prints the options the video is made with, as the service
// applied them; an option that does not apply (a voice without narration,
// a volume without music) is left out.
func printStudio(w io.Writer, st client.LongVideoStudio) {
	fmt.Fprintf(w, "captions\t%s\naspect_ratio\t%s\ntransition\t%s\nlanguage\t%s\n", st.Captions, st.AspectRatio, st.Transition, st.Language)
	if st.Voice != nil {
		fmt.Fprintf(w, "voice\t%s\n", *st.Voice)
	}
	if st.NarrationSpeed != nil {
		fmt.Fprintf(w, "narration_speed\t%s\n", strconv.FormatFloat(*st.NarrationSpeed, 'f', -1, 64))
	}
	if st.MusicURL != nil {
		fmt.Fprintf(w, "music_url\t%s\n", *st.MusicURL)
	}
	if st.MusicVolume != nil {
		fmt.Fprintf(w, "music_volume\t%s\n", strconv.FormatFloat(*st.MusicVolume, 'f', -1, 64))
	}
}

func storyStatusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("story status", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return usageFail(stderr, "story status ID", err)
	}
	v, err := af.client().LongVideo(ctx, pos[0])
	if err != nil {
		return apiFail(stderr, "story status", err)
	}
	return printLongVideo(stdout, af, v)
}

func storyVoicesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("story voices", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	language := fs.String("language", "en", "narration language (two-letter code)")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "story voices", err)
	}
	voices, err := af.client().Voices(ctx, *language)
	if err != nil {
		return apiFail(stderr, "story voices", err)
	}
	if af.jsonOut {
		printJSON(stdout, voices)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, v := range voices {
		def := ""
		if v.Default {
			def = " (default)"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", v.ID, def, v.Name, v.Gender, v.PreviewURL)
	}
	tw.Flush()
	return exitOK
}

func storyEstimateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("story estimate", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	var sf storyFlags
	sf.register(fs)
	model := fs.String("model", "beta-2", "video model_version")
	count := fs.Int("scenes", 0, "number of scenes (1-20), or give them with --scene")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "story estimate", err)
	}
	scenes, err := sf.sceneList()
	if err != nil {
		return usageFail(stderr, "story estimate", err)
	}
	req := client.EstimateRequest{Model: *model, SceneCount: *count, Scenes: scenes, LanguageCode: sf.language,
		EnableNarration: sf.enableNarration(), StudioOptions: sf.studio()}
	e, err := af.client().EstimateLongVideo(ctx, req)
	if err != nil {
		return apiFail(stderr, "story estimate", err)
	}
	if af.jsonOut {
		printJSON(stdout, e)
		return exitOK
	}
	// Scenes of their own models make per_second the scenes' mean.
	var own []string
	for _, sc := range scenes {
		if sc.Model != "" {
			own = append(own, fmt.Sprintf("scene %d: %s", sc.SceneNumber, sc.Model))
		}
	}
	name, mean := e.Model, ""
	if len(own) > 0 {
		name, mean = fmt.Sprintf("%s (%s)", e.Model, strings.Join(own, ", ")), " on average"
	}
	fmt.Fprintf(stdout, "%s: %d scenes × %d s = %d s, %s credits per second%s: %s credits\n", name,
		e.SceneInfo.TotalScenes, e.SceneInfo.DurationPerScene, e.Duration, e.Credits.PerSecond, mean, e.Credits.Total)
	return exitOK
}

// storyFlags are what story create and story estimate both take: the
// scenes, each with its own narration and model, and the options the
// service checks them with, so that an estimate prices and checks what
// the same create would send.
type storyFlags struct {
	scenes, narrations, models repeated
	language, voice            string
	captions, transition       string
	silent, portrait           bool
	speed                      float64
}

func (f *storyFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.scenes, "scene", "a scene's prompt, in order (repeatable, 1-20)")
	fs.Var(&f.narrations, "narration", "the narration of the scene of the same position (repeatable; default, or \"\": the scene's prompt)")
	fs.Var(&f.models, "scene-model", "N=MODEL: scene N (from 1, in the order of --scene) is made and priced by its own video model_version (repeatable)")
	fs.StringVar(&f.language, "language", "en", "narration language (two-letter code)")
	fs.BoolVar(&f.silent, "no-narration", false, "make the video without narration")
	fs.Float64Var(&f.speed, "narration-speed", 0, "the narration's tempo, 0.5 to 1.5 (default: 1; a narration too long for its scene is still sped up, at most 1.5×)")
	fs.StringVar(&f.voice, "voice", "", "the narration's voice, an id of `story voices --language L` (default: the language's first)")
	fs.BoolVar(&f.portrait, "portrait", false, "make the video upright, 720x1280 (aspect_ratio portrait)")
	fs.StringVar(&f.captions, "captions", "", "captions: none, sidecar (a WebVTT file; the default when narrated) or burned (drawn on the picture too)")
	fs.StringVar(&f.transition, "transition", "", "between scenes: cut (the default) or crossfade (0.5 s)")
}

// sceneList is the scenes, numbered in the order given, each with its
// narration and its own model; an error names a flag that does not fit
// them.
func (f *storyFlags) sceneList() ([]client.Scene, error) {
	if len(f.narrations) > len(f.scenes) {
		return nil, errors.New("more --narration than --scene flags")
	}
	var out []client.Scene
	for i, s := range f.scenes {
		sc := client.Scene{SceneNumber: i + 1, Prompt: s}
		if i < len(f.narrations) {
			sc.Narration = f.narrations[i]
		}
		out = append(out, sc)
	}
	for _, m := range f.models {
		num, model, ok := strings.Cut(m, "=")
		n, err := strconv.Atoi(num)
		switch {
		case !ok || err != nil || model == "":
			return nil, fmt.Errorf("--scene-model %q: want N=MODEL, N the scene's position (from 1)", m)
		case n < 1 || n > len(out):
			return nil, fmt.Errorf("--scene-model %q: there is no scene %d (%d --scene flags)", m, n, len(out))
		case out[n-1].Model != "":
			return nil, fmt.Errorf("--scene-model %q: scene %d already has model %s", m, n, out[n-1].Model)
		}
		out[n-1].Model = model
	}
	return out, nil
}

// enableNarration is enable_narration: nil (the service's default,
// narrated) unless --no-narration.
func (f *storyFlags) enableNarration() *bool {
	if !f.silent {
		return nil
	}
	off := false
	return &off
}

// studio returns the production options the flags set (the music is
// story create's alone: it changes no price).
func (f *storyFlags) studio() client.StudioOptions {
	st := client.StudioOptions{Captions: f.captions, Transition: f.transition, Voice: f.voice}
	if f.portrait {
		st.AspectRatio = "portrait"
	}
	if f.speed != 0 {
		st.NarrationSpeed = &f.speed
	}
	return st
}

func storyCreateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("story create", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	var sf storyFlags
	sf.register(fs)
	prompt := fs.String("prompt", "", "the video's main prompt")
	model := fs.String("model", "", "video model_version (default: the service's, beta-2)")
	style := fs.String("style", "", "video_style: auto, cinematic, documentary, animation, noir or vintage")
	music := fs.String("music", "", "music under the video: @file (.wav, .mp3 or .m4a, at most 100 MiB; uploaded), an https URL (at most 20 MiB) or a data:audio URI")
	musicVolume := fs.Float64("music-volume", -1, "the music's gain, 0 to 1 (default: the service's, 0.3)")
	wait := fs.Bool("wait", false, "wait until the video is final, then download it")
	out := fs.String("out", "", "directory for the video (implies --wait; default: the current directory)")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "story create", err)
	}
	scenes, err := sf.sceneList()
	if err != nil {
		return usageFail(stderr, "story create", err)
	}
	req := client.LongVideoRequest{Prompt: *prompt, Scenes: scenes, LanguageCode: sf.language, Model: *model, VideoStyle: *style,
		EnableNarration: sf.enableNarration(), StudioOptions: sf.studio()}
	musicFile, musicType, err := musicArg(*music)
	if err != nil {
		return usageFail(stderr, "story create", err)
	}
	if musicFile == "" {
		req.MusicURL = *music
	}
	if *musicVolume >= 0 {
		req.MusicVolume = musicVolume
	}
	c := af.client()
	if musicFile != "" {
		if req.MusicURL, err = uploadMusic(ctx, c, musicFile, musicType); err != nil {
			return apiFail(stderr, "story create", err)
		}
	}
	created, err := c.CreateLongVideo(ctx, req)
	if err != nil {
		return apiFail(stderr, "story create", err)
	}
	if af.jsonOut {
		printJSON(stdout, created)
	} else {
		fmt.Fprintf(stdout, "video %s: %s\n", created.VideoID, created.Message)
	}
	if !*wait && *out == "" {
		return exitOK
	}
	return waitStory(ctx, c, af, created.VideoID, len(req.Scenes), *out, stdout, stderr)
}

func storyRegenerateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("story regenerate", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	scene := fs.Int("scene", 0, "the scene_number of the scene to make again (required)")
	prompt := fs.String("prompt", "", "the scene's new prompt (default: its own)")
	narration := fs.String("narration", "", "the scene's new narration (default: its own); the scene is narrated again when it changes")
	wait := fs.Bool("wait", false, "wait until the new revision is ready, then download it")
	out := fs.String("out", "", "directory for the video (implies --wait; default: the current directory)")
	pos, err := parseArgs(fs, args, 1)
	if err == nil && *scene < 1 {
		err = errors.New("--scene N is required (the scene_number to make again)")
	}
	if err != nil {
		return usageFail(stderr, "story regenerate ID --scene N", err)
	}
	c := af.client()
	started, err := c.RegenerateScene(ctx, pos[0], *scene, client.RegenerateRequest{Prompt: *prompt, Narration: *narration})
	if err != nil {
		return apiFail(stderr, "story regenerate", err)
	}
	if af.jsonOut {
		printJSON(stdout, started)
	} else if r := started.Regenerating; r != nil {
		fmt.Fprintf(stdout, "video %s: scene %d regenerating to revision %d; final_video_url serves revision %d meanwhile\n",
			started.ID, r.SceneNumber, r.Revision, started.Revision)
	}
	if !*wait && *out == "" {
		return exitOK
	}
	if *out == "" {
		*out = "."
	}
	p := newProgress(stderr, fmt.Sprintf("scene %d regenerating", *scene))
	st, err := c.WaitRegenerate(ctx, started.ID, client.WaitOptions{Interval: time.Second, MaxInterval: 5 * time.Second}, nil)
	if err != nil {
		p.Done("stopped waiting; the regenerate goes on: mediagen story status " + started.ID)
		return apiFail(stderr, "story regenerate", err)
	}
	if st.Revision <= started.Revision {
		p.Done(fmt.Sprintf("scene %d not regenerated", *scene))
		fmt.Fprintf(stderr, "mediagen story regenerate: the regenerate of scene %d ended without a new revision (failed or canceled; its credits are back); the video stays at revision %d\n",
			*scene, st.Revision)
		return exitError
	}
	p.Done(fmt.Sprintf("scene %d regenerated: revision %d", *scene, st.Revision))
	if af.jsonOut {
		printJSON(stdout, st)
	}
	return downloadStory(ctx, c, af, "story regenerate", st, *out, stdout, stderr)
}

// waitStory waits for a long-form video, showing each scene's status when
// the service lists them, then downloads the final video and its captions.
func waitStory(ctx context.Context, c *client.Client, af apiFlags, id string, scenes int, out string, stdout, stderr io.Writer) int {
	if out == "" {
		out = "."
	}
	p := newProgress(stderr, fmt.Sprintf("%d scenes processing", scenes))
	st, err := c.FollowLongVideo(ctx, id, client.WaitOptions{Interval: time.Second, MaxInterval: 5 * time.Second},
		func(v client.LongVideoStatus) {
			if !client.Final(v.Status) { // Done writes the final state, once
				p.Update(sceneSummary(v, scenes), float64(v.Progress))
			}
		})
	if err != nil {
		p.Done("stopped waiting; the video goes on: mediagen story status " + id)
		return apiFail(stderr, "story create", err)
	}
	p.Done(sceneSummary(st, scenes))
	if af.jsonOut {
		printJSON(stdout, st)
	}
	if st.Status != client.StatusCompleted {
		msg := ""
		if st.Error != nil {
			msg = *st.Error
		}
		fmt.Fprintf(stderr, "mediagen story create: %s: %s\n", st.Status, msg)
		return exitError
	}
	return downloadStory(ctx, c, af, "story create", st, out, stdout, stderr)
}

// downloadStory downloads a completed video's final video and its
// captions into out, and prints their paths.
func downloadStory(ctx context.Context, c *client.Client, af apiFlags, cmd string, st client.LongVideoStatus, out string, stdout, stderr io.Writer) int {
	id := st.ID
	path, err := c.DownloadFile(ctx, st.FinalVideoURL, out, id)
	if err != nil {
		return apiFail(stderr, cmd, err)
	}
	if !af.jsonOut {
		fmt.Fprintf(stdout, "%s (%.1f s)\n", path, st.TotalDuration)
	}
	if st.CaptionsURL == "" {
		return exitOK
	}
	captions, err := c.DownloadFile(ctx, st.CaptionsURL, out, id)
	if err != nil {
		return apiFail(stderr, cmd, err)
	}
	if !af.jsonOut {
		fmt.Fprintln(stdout, captions)
	}
	return exitOK
}

// generationLine is the status line of a generation being waited for:
// its place in line while the provider is at its cap of jobs, else its
// status with the time left by the variant's typical duration (typical; 0
// = unknown), elapsed being the time waited so far.
func generationLine(s client.GenerationStatus, elapsed, typical time.Duration) string {
	switch {
	case s.QueuePosition > 0:
		return fmt.Sprintf("%s, queued at the provider (position %d)", s.Status, s.QueuePosition)
	case typical <= 0:
		return s.Status
	case elapsed < typical:
		left := (typical - elapsed + time.Second - 1).Truncate(time.Second) // rounded up: never "0s left"
		return fmt.Sprintf("%s, about %s left", s.Status, left)
	default:
		return fmt.Sprintf("%s, longer than the usual %s", s.Status, typical)
	}
}

// sceneSummary is the status line of a long-form video: each scene's
// status when the view lists them (scene 1 ✓ · scene 2 processing), else
// the video's status.
func sceneSummary(v client.LongVideoStatus, scenes int) string {
	if len(v.Scenes) == 0 {
		return fmt.Sprintf("%d scenes %s", scenes, v.Status)
	}
	parts := make([]string, len(v.Scenes))
	for i, s := range v.Scenes {
		mark := s.Status
		if s.Status == client.StatusCompleted {
			mark = "✓"
		}
		parts[i] = fmt.Sprintf("scene %d %s", s.SceneNumber, mark)
	}
	summary := strings.Join(parts, " · ")
	if client.Final(v.Status) {
		summary += " " + v.Status
	}
	return summary
}

func modelsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "models", err)
	}
	models, err := af.client().Models(ctx)
	if err != nil {
		return apiFail(stderr, "models", err)
	}
	if af.jsonOut {
		for _, m := range models {
			printJSON(stdout, m)
		}
		return exitOK
	}
	for i, m := range models {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%s/%s  %s  %s\n", m.Model, m.Version, m.Kind, priceInWords(m.Price))
		fields, err := m.Fields()
		if err != nil {
			return fail(stderr, exitError, err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, f := range fields {
			name := "  " + f.Name
			if f.Required {
				name += " (required)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, fieldType(f), f.Description)
		}
		tw.Flush()
	}
	return exitOK
}

func fieldType(f client.Field) string {
	t := f.Type
	switch {
	case f.Type == "enum":
		t = strings.Join(f.Enum, "|")
	case f.Type == "string" && f.MaxLength > 0:
		t = fmt.Sprintf("text, %d-%d chars", max(f.MinLength, 1), f.MaxLength)
	case f.Type == "string":
		t = "text"
	case f.Type == "image_list":
		t = fmt.Sprintf("images, up to %d", f.MaxItems)
	}
	if f.Default != "" {
		t += " = " + f.Default
	}
	return t
}

// priceInWords renders a price rule: "13.00 credits per second; 26.00 if
// resolution=1080p, generate_audio=true; 104.00 at defaults".
func priceInWords(p client.Price) string {
	parts := []string{p.CreditsPerUnit + " credits per " + p.Unit}
	for _, c := range p.Cases {
		keys := make([]string, 0, len(c.When))
		for k := range c.When {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		conds := make([]string, len(keys))
		for i, k := range keys {
			conds[i] = k + "=" + c.When[k]
		}
		parts = append(parts, c.CreditsPerUnit+" if "+strings.Join(conds, ", "))
	}
	if p.CreditsAtDefaults != "" {
		parts = append(parts, p.CreditsAtDefaults+" at defaults")
	}
	return strings.Join(parts, "; ")
}

// musicArg reads --music: @file is a file to upload, of the audio type
// its extension names; anything else (a URL, a data: URI) is sent as it
// is, and file is "".
func musicArg(arg string) (file, contentType string, err error) {
	name, isFile := strings.CutPrefix(arg, "@")
	if !isFile {
		return "", "", nil
	}
	types := map[string]string{".wav": "audio/wav", ".mp3": "audio/mpeg", ".m4a": "audio/mp4", ".mp4": "audio/mp4"}
	ctype, ok := types[strings.ToLower(filepath.Ext(name))]
	if !ok {
		return "", "", fmt.Errorf("--music %s: the file must be .wav, .mp3 or .m4a", name)
	}
	return name, ctype, nil
}

// uploadMusic uploads --music's file (client.Upload) and answers its file
// URL, mediagen://files/<file_id>, which music_url takes.
func uploadMusic(ctx context.Context, c *client.Client, path, contentType string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--music: %w", err)
	}
	f, err := c.Upload(ctx, raw, contentType)
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", path, err)
	}
	return f.URL, nil
}

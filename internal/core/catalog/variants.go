package catalog

import "github.com/mediagen-dev/mediagen/internal/core/domain"

// Text limits, in characters. Every text field has one: a request the
// provider would refuse, or whose echo would swell its answer, is refused
// here before anything is charged.
const (
	// The spec's prompt limits.
	alphaPromptMaxLen   = 20000
	zetaProPromptMinLen = 3
	ZetaProPromptMaxLen = 50000
	// promptMaxLen bounds a prompt where neither the spec nor the
	// provider sets a lower limit.
	promptMaxLen = 20000
	// The providers' own lower limits: provider-c's gamma-v2.1 takes 2,500
	// characters, provider-d's models 2,000.
	gammaPromptMaxLen     = 2500
	ProviderDPromptMaxLen = 2000
	// NegativePromptMaxLen bounds what to avoid: a list of things, far
	// shorter than a prompt.
	NegativePromptMaxLen = 2000
)

// video01DurationSeconds is the fixed clip length of video-01, which has no
// duration field.
const video01DurationSeconds = 6

// variants is the spec's variant table with the input fields of each, in the
// spec's order. Defaults are ours where the spec names none; they are what a
// request is priced and rendered at when the field is absent.
var variants = []Variant{
	video("provider-a", "alpha-3.1-fast",
		prompt(0, alphaPromptMaxLen),
		boolean("auto_fix", "", "Automatically repairs prompts that fail content policy."),
		enum("duration", "8", "Clip length in seconds.", "4", "6", "8"),
		enum("resolution", "720p", "Output resolution.", "720p", "1080p"),
		enum("aspect_ratio", "16:9", "Frame shape.", "16:9", "9:16"),
		// Explicitly false by default: audio changes the price, so the
		// provider must not switch it on by its own default.
		boolean("generate_audio", "false", "Generate audio with the video."),
		text("negative_prompt", NegativePromptMaxLen, "Content to avoid."),
	),
	video("provider-b", "beta-2-enchanted",
		prompt(0, promptMaxLen),
		enum("duration", "10", "Clip length in seconds.", "10", "15"),
		enum("n_frames", "", "Clip length in seconds, the provider's name for duration; must agree with duration when both are given.", "10", "15"),
		imageList("image_urls", 2, "Reference images (first frame, last frame)."),
		enum("aspect_ratio", "landscape", "Frame shape.", "landscape", "portrait"),
		boolean("remove_watermark", "", "Remove the provider's watermark."),
	),
	video("provider-b", "beta-2",
		prompt(0, promptMaxLen),
		required(enum("seconds", "", "Clip length in seconds.", "4", "8", "12")),
		required(enum("aspect_ratio", "", "landscape (1280x720) or portrait (720x1280).", "landscape", "portrait")),
		imageRef("input_reference", "Reference image."),
	),
	video("provider-c", "gamma-v2.1",
		enum("mode", "standard", "Generation mode.", "standard", "pro"),
		prompt(0, gammaPromptMaxLen),
		enum("duration", "5", "Clip length in seconds.", "5", "10"),
		required(imageRef("start_image", "Starting image.")),
	),
	withFixedDuration(video("provider-d", "video-01",
		prompt(0, ProviderDPromptMaxLen),
		imageRef("first_frame_image", "Starting image."),
		imageRef("subject_reference", "Subject reference for consistency."),
	), video01DurationSeconds),
	video("provider-e", "delta-1-pro",
		enum("fps", "24", "Frames per second.", "24"),
		imageRef("image", "Reference image."),
		prompt(0, promptMaxLen),
		enum("duration", "5", "Clip length in seconds.", "5", "10"),
		enum("resolution", "1080p", "Output resolution.", "480p", "1080p"),
		enum("aspect_ratio", "16:9", "Frame shape.", "16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "9:21"),
		boolean("camera_fixed", "", "Whether the camera position is fixed."),
	),
	video("provider-d", "epsilon-02",
		prompt(0, ProviderDPromptMaxLen),
		enum("duration", "6", "Clip length in seconds.", "6", "10"),
		enum("resolution", "768p", "Output resolution.", "512p", "768p", "1080p"),
		imageRef("first_frame_image", "Starting image."),
	),
	imageVariant("provider-a", "zeta-pro",
		prompt(zetaProPromptMinLen, ZetaProPromptMaxLen),
		enum("num_images", "", "Number of images; the same as image_count, which it overrides.", "1", "2", "3", "4"),
		enum("resolution", "1K", "Output resolution; 4K is charged at double rate.", "1K", "2K", "4K"),
		enum("aspect_ratio", "1:1", "Frame shape.", "21:9", "16:9", "3:2", "4:3", "5:4", "1:1", "4:5", "3:4", "2:3", "9:16"),
		enum("output_format", "png", "Image file format.", "jpeg", "png", "webp"),
		boolean("enable_web_search", "", "Use current web information."),
	),
	imageVariant("provider-a", "zeta",
		prompt(0, promptMaxLen),
		imageList("image_input", 0, "Input images."),
	),
	imageVariant("provider-f", "eta-context-max",
		prompt(0, promptMaxLen),
		imageRef("input_image", "Context image."),
		// The spec's default, match_input_image, is accepted when sent
		// explicitly too.
		enum("aspect_ratio", "match_input_image", "Frame shape; by default that of the input image.", "1:1", "16:9", "9:16", "match_input_image"),
	),
	imageVariant("provider-a", "theta-4-fast",
		prompt(0, promptMaxLen),
		enum("aspect_ratio", "1:1", "Frame shape.", "4:3", "3:4", "16:9", "9:16", "1:1"),
	),
	imageVariant("provider-g", "iota-v3-turbo",
		prompt(0, promptMaxLen),
		enum("aspect_ratio", "1:1", "Frame shape.", "3:2", "3:4", "4:3", "4:5", "1:1", "16:9", "9:16", "1:3"),
	),
}

func video(model, version string, fields ...Field) Variant {
	return Variant{Model: model, Version: version, Kind: domain.MediaVideo, Fields: fields, UpstreamModel: model + "/" + version}
}

func imageVariant(model, version string, fields ...Field) Variant {
	return Variant{Model: model, Version: version, Kind: domain.MediaImage, Fields: fields, UpstreamModel: model + "/" + version}
}

func withFixedDuration(v Variant, seconds int) Variant {
	v.FixedDurationSeconds = seconds
	return v
}

func prompt(minLen, maxLen int) Field {
	return Field{Name: "prompt", Type: typeString, Required: true, MinLen: minLen, MaxLen: maxLen,
		Description: "What to generate."}
}

func text(name string, maxLen int, desc string) Field {
	return Field{Name: name, Type: typeString, MaxLen: maxLen, Description: desc}
}

func boolean(name, def, desc string) Field {
	return Field{Name: name, Type: TypeBoolean, Default: def, Description: desc}
}

func enum(name, def, desc string, values ...string) Field {
	return Field{Name: name, Type: TypeEnum, Enum: values, Default: def, Description: desc}
}

func imageRef(name, desc string) Field {
	return Field{Name: name, Type: TypeImage, Description: desc}
}

func imageList(name string, maxItems int, desc string) Field {
	return Field{Name: name, Type: TypeImageList, MaxItems: maxItems, Description: desc}
}

func required(f Field) Field {
	f.Required = true
	return f
}

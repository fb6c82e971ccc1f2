package simulator

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits that keep a local render small enough for a laptop.
const (
	maxVideoSeconds = 60
	maxFPS          = 60
	minShortSide    = 144
	maxShortSide    = 2160
	maxLongSide     = 4096
	maxImages       = 4
)

// videoSpec is what a video prediction renders.
type videoSpec struct {
	Width, Height int
	Seconds       float64
	FPS           float64
	Audio         bool
}

// imageSpec is what an image prediction renders.
type imageSpec struct {
	Width, Height int
	Count         int
	// Format is "png", "jpeg" or "webp".
	Format string
}

func parseVideoSpec(input map[string]any) (videoSpec, error) {
	spec := videoSpec{Seconds: 5, FPS: 24}
	if v, key, ok, err := number(input, "duration", "seconds"); err != nil {
		return spec, err
	} else if ok {
		if v <= 0 || v > maxVideoSeconds {
			return spec, fmt.Errorf("input.%s must be more than 0 and at most %d seconds", key, maxVideoSeconds)
		}
		spec.Seconds = v
	}
	if v, _, ok, err := number(input, "fps"); err != nil {
		return spec, err
	} else if ok {
		if v < 1 || v > maxFPS {
			return spec, fmt.Errorf("input.fps must be from 1 to %d", maxFPS)
		}
		spec.FPS = v
	}
	short := 720
	if res, ok, err := text(input, "resolution"); err != nil {
		return spec, err
	} else if ok {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.ToLower(res), "p"))
		if err != nil || !strings.HasSuffix(strings.ToLower(res), "p") || n < minShortSide || n > maxShortSide {
			return spec, fmt.Errorf("input.resolution %q is not like 720p (from %dp to %dp)", res, minShortSide, maxShortSide)
		}
		short = n
	}
	w, h, err := aspect(input, 16, 9)
	if err != nil {
		return spec, err
	}
	// The resolution names the short side.
	if w >= h {
		spec.Width, spec.Height = even(float64(short)*w/h), even(float64(short))
	} else {
		spec.Width, spec.Height = even(float64(short)), even(float64(short)*h/w)
	}
	if max(spec.Width, spec.Height) > maxLongSide {
		return spec, fmt.Errorf("frame %dx%d is over the simulator's %d px limit", spec.Width, spec.Height, maxLongSide)
	}
	if spec.Audio, err = boolean(input, "generate_audio"); err != nil {
		return spec, err
	}
	return spec, nil
}

func parseImageSpec(input map[string]any) (imageSpec, error) {
	spec := imageSpec{Count: 1, Format: "png"}
	if v, key, ok, err := number(input, "num_outputs", "num_images"); err != nil {
		return spec, err
	} else if ok {
		if v != math.Trunc(v) || v < 1 || v > maxImages {
			return spec, fmt.Errorf("input.%s must be a whole number from 1 to %d", key, maxImages)
		}
		spec.Count = int(v)
	}
	if f, ok, err := text(input, "output_format"); err != nil {
		return spec, err
	} else if ok {
		switch strings.ToLower(f) {
		case "png":
			spec.Format = "png"
		case "jpeg", "jpg":
			spec.Format = "jpeg"
		case "webp":
			spec.Format = "webp"
		default:
			return spec, fmt.Errorf("input.output_format %q is not one of png, jpeg, jpg, webp", f)
		}
	}
	long := 1024
	if res, ok, err := text(input, "resolution"); err != nil {
		return spec, err
	} else if ok {
		switch strings.ToUpper(res) {
		case "1K":
			long = 1024
		case "2K":
			long = 2048
		case "4K":
			long = 4096
		default:
			return spec, fmt.Errorf("input.resolution %q is not one of 1K, 2K, 4K", res)
		}
	}
	w, h, err := aspect(input, 1, 1)
	if err != nil {
		return spec, err
	}
	// The resolution names the long side.
	if w >= h {
		spec.Width, spec.Height = even(float64(long)), even(float64(long)*h/w)
	} else {
		spec.Width, spec.Height = even(float64(long)*w/h), even(float64(long))
	}
	return spec, nil
}

// aspect reads input.aspect_ratio: "w:h", landscape (16:9), portrait (9:16)
// or match_input_image (1:1, there is no input image to match).
func aspect(input map[string]any, defW, defH float64) (w, h float64, err error) {
	s, ok, err := text(input, "aspect_ratio")
	if err != nil || !ok {
		return defW, defH, err
	}
	switch strings.ToLower(s) {
	case "landscape":
		return 16, 9, nil
	case "portrait":
		return 9, 16, nil
	case "match_input_image":
		return 1, 1, nil
	}
	a, b, found := strings.Cut(s, ":")
	wi, errW := strconv.Atoi(a)
	hi, errH := strconv.Atoi(b)
	if !found || errW != nil || errH != nil || wi < 1 || hi < 1 || wi > 100 || hi > 100 {
		return 0, 0, fmt.Errorf("input.aspect_ratio %q is not like 16:9, landscape or portrait", s)
	}
	if r := float64(wi) / float64(hi); r > 4 || r < 0.25 {
		return 0, 0, fmt.Errorf("input.aspect_ratio %q is beyond 4:1 or 1:4", s)
	}
	return float64(wi), float64(hi), nil
}

// number reads the first of keys present, as a JSON number or a numeric
// string (the service sends enumerated values as strings).
func number(input map[string]any, keys ...string) (v float64, key string, ok bool, err error) {
	for _, key := range keys {
		raw, present := input[key]
		if !present || raw == nil {
			continue
		}
		switch x := raw.(type) {
		case float64:
			return x, key, true, nil
		case int:
			return float64(x), key, true, nil
		case json.Number:
			f, err := x.Float64()
			return f, key, err == nil, err
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, key, false, fmt.Errorf("input.%s %q is not a number", key, x)
			}
			return f, key, true, nil
		default:
			return 0, key, false, fmt.Errorf("input.%s must be a number or a numeric string", key)
		}
	}
	return 0, "", false, nil
}

func text(input map[string]any, key string) (string, bool, error) {
	raw, present := input[key]
	if !present || raw == nil {
		return "", false, nil
	}
	s, isString := raw.(string)
	if !isString {
		return "", false, fmt.Errorf("input.%s must be a string", key)
	}
	return strings.TrimSpace(s), true, nil
}

func boolean(input map[string]any, key string) (bool, error) {
	switch x := input[key].(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		if err != nil {
			return false, fmt.Errorf("input.%s %q is not a boolean", key, x)
		}
		return b, nil
	default:
		return false, fmt.Errorf("input.%s must be a boolean", key)
	}
}

// even rounds to the nearest even number (H.264 4:2:0 needs even sizes),
// at least 2.
func even(x float64) int {
	return max(2, 2*int(math.Round(x/2)))
}

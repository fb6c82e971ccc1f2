package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Limits of a generate request.
const (
	// maxDepth bounds the nesting of a body; the deepest valid request is
	// three levels (body, input, an image list).
	maxDepth = 32
	// DefaultMaxDataURIBytes is the largest decoded data: URI image:
	// 4,500,000 bytes are 6,000,000 of base64, so that a body holding one
	// of them, a prompt and the other fields stays under the 6,258,688
	// bytes the body may take in the function's event
	// (httpapi.MaxBodyBytes, which Lambda's 6 MiB invocation payload
	// sets). Several images together are bounded by the body's limit.
	DefaultMaxDataURIBytes = 4_500_000
	MaxImageCount          = 4
)

// topLevelFields are the fields of a generate body, in the spec's order.
var topLevelFields = []string{"model", "model_version", "input", "image_count", "webhook_url", "webhook_events", "deadline_seconds"}

// maxDeadlineSeconds bounds deadline_seconds: a day, as Replicate's
// Cancel-After.
const maxDeadlineSeconds = 86400

// Options tune validation to where the service runs.
type Options struct {
	// AllowLoopbackURLs admits http and https URLs on 127.0.0.1, ::1 and
	// localhost, which the local runtime and tests need; link-local and
	// private addresses stay refused.
	AllowLoopbackURLs bool
	// WebhookLoopbackPorts are the ports of this machine a webhook_url may
	// name where AllowLoopbackURLs admits loopback (serve --webhook-allow);
	// a loopback webhook to any other port is refused, so that a key can
	// neither reach nor probe the machine's other services.
	WebhookLoopbackPorts []uint16
	// MaxDataURIBytes bounds a decoded data: URI image; 0 means
	// DefaultMaxDataURIBytes.
	MaxDataURIBytes int
}

func (o Options) maxDataURIBytes() int {
	if o.MaxDataURIBytes > 0 {
		return o.MaxDataURIBytes
	}
	return DefaultMaxDataURIBytes
}

// Request is a validated generate request.
type Request struct {
	Variant Variant
	// Input is what the client sent, with numeric enum values normalised to
	// strings; it is echoed back as input_parameters.
	Input map[string]any
	// Resolved is Input plus defaults: what is sent upstream and priced.
	// For zeta-pro it carries num_images equal to ImageCount.
	Resolved map[string]any
	// ImageCount is how many images an image variant produces (1 for video).
	ImageCount int
	// Webhook is where to report the generation's end, if asked.
	Webhook domain.Webhook
	// Deadline is deadline_seconds: a generation not done by then is
	// canceled upstream and ends canceled (reason "deadline"); 0 for none.
	Deadline time.Duration
}

// ParseGenerate decodes and validates the body of POST
// /api/generations/generate. Every problem is reported at once in a
// *ValidationError; a body that is not one well-formed JSON object is
// reported alone, since nothing else can be checked.
func ParseGenerate(body []byte, opts Options) (Request, error) {
	obj, err := DecodeObject(body)
	if err != nil {
		return Request{}, err
	}
	var p Problems
	p.Unknown("", obj, topLevelFields)
	v, found := checkVariant(obj, &p)

	rawInput, hasInput := obj["input"]
	input, isObject := rawInput.(map[string]any)
	switch {
	case !hasInput:
		p.Add("input", "is required")
	case !isObject:
		p.Add("input", "must be an object, got "+jsonKind(rawInput))
	}

	count, countGiven := checkImageCount(obj, &p)
	hook := CheckWebhook(obj, domain.GenerationEvents, opts, &p)
	deadline := checkDeadline(obj, &p)
	if !found || !isObject {
		return Request{}, p.Err() // the input cannot be checked
	}

	req := Request{Variant: v, Input: checkInput(v, input, opts, &p), ImageCount: count, Webhook: hook, Deadline: deadline}
	if v.Kind == domain.MediaVideo {
		if countGiven && count != 1 && !p.Has("image_count") {
			p.Add("image_count", "must be 1 for video variants, which produce one video")
		}
		req.ImageCount = 1
	}
	if n, ok := req.Input["num_images"].(string); ok {
		// zeta-pro: num_images (valid, since Input keeps only valid values)
		// sets the count; image_count may repeat it.
		num, _ := strconv.Atoi(n)
		if countGiven && !p.Has("image_count") && count != num {
			p.Add("image_count", fmt.Sprintf("is %d but input.num_images is %q; give one of them or the same number in both", count, n))
		}
		req.ImageCount = num
	}
	if err := p.Err(); err != nil {
		return Request{}, err
	}
	req.Resolved = v.Resolve(req.Input)
	if _, ok := v.Field("num_images"); ok {
		req.Resolved["num_images"] = strconv.Itoa(req.ImageCount)
	}
	return req, nil
}

// checkVariant resolves model and model_version, explaining a mismatch.
func checkVariant(obj map[string]any, p *Problems) (Variant, bool) {
	model, modelOK := requiredString(obj, "model", p)
	version, versionOK := requiredString(obj, "model_version", p)
	other, exists := byVersion(version)
	if modelOK && len(versions(model)) == 0 {
		msg := fmt.Sprintf("unknown model %q (allowed: %s)", Clip(model), strings.Join(Models(), ", "))
		if exists {
			msg += fmt.Sprintf("; model_version %q belongs to %q", version, other.Model)
		}
		p.Add("model", msg)
		modelOK = false
	}
	if !versionOK {
		return Variant{}, false
	}
	switch {
	case !modelOK && !exists:
		p.Add("model_version", fmt.Sprintf("unknown version %q", Clip(version)))
	case !modelOK:
		// The model is missing or wrong; its error says so.
	case !exists:
		p.Add("model_version", fmt.Sprintf("unknown version %q of model %q (allowed: %s)",
			Clip(version), model, strings.Join(versions(model), ", ")))
	case other.Model != model:
		p.Add("model_version", fmt.Sprintf("%q belongs to model %q, not %q", version, other.Model, model))
	default:
		return other.clone(), true
	}
	return Variant{}, false
}

func requiredString(obj map[string]any, key string, p *Problems) (string, bool) {
	raw, ok := obj[key]
	if !ok {
		p.Add(key, "is required")
		return "", false
	}
	s, ok := raw.(string)
	if !ok {
		p.Add(key, "must be a string, got "+jsonKind(raw))
		return "", false
	}
	if s == "" {
		p.Add(key, "must not be empty")
		return "", false
	}
	return s, true
}

// checkImageCount reads image_count: an integer 1..4, default 1.
func checkImageCount(obj map[string]any, p *Problems) (count int, given bool) {
	raw, ok := obj["image_count"]
	if !ok {
		return 1, false
	}
	msg := fmt.Sprintf("must be an integer from 1 to %d", MaxImageCount)
	num, ok := raw.(json.Number)
	if !ok {
		p.Add("image_count", msg+", got "+jsonKind(raw))
		return 1, true
	}
	n, err := strconv.Atoi(num.String())
	if err != nil || n < 1 || n > MaxImageCount {
		p.Add("image_count", fmt.Sprintf("%s, got %s", msg, Clip(num.String())))
		return 1, true
	}
	return n, true
}

// checkDeadline reads deadline_seconds: an integer 1..MaxDeadlineSeconds,
// absent for none.
func checkDeadline(obj map[string]any, p *Problems) time.Duration {
	raw, ok := obj["deadline_seconds"]
	if !ok {
		return 0
	}
	msg := fmt.Sprintf("must be a whole number of seconds from 1 to %d", maxDeadlineSeconds)
	num, ok := raw.(json.Number)
	if !ok {
		p.Add("deadline_seconds", msg+", got "+jsonKind(raw))
		return 0
	}
	n, err := strconv.Atoi(num.String())
	if err != nil || n < 1 || n > maxDeadlineSeconds {
		p.Add("deadline_seconds", fmt.Sprintf("%s, got %s", msg, Clip(num.String())))
		return 0
	}
	return time.Duration(n) * time.Second
}

// DecodeObject reads a request body that must be exactly one JSON object: valid
// UTF-8, no duplicate keys at any depth, at most maxDepth levels, and
// nothing after it. Numbers stay json.Number, so large ones keep their text.
func DecodeObject(body []byte) (map[string]any, error) {
	if !utf8.Valid(body) {
		return nil, bodyError("is not valid UTF-8")
	}
	if at := loneSurrogate(body); at >= 0 {
		// encoding/json would silently turn it into U+FFFD.
		return nil, bodyError(fmt.Sprintf("has an escaped lone UTF-16 surrogate at byte %d, which is not a character", at))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return nil, bodyError("is empty; a JSON object is required")
	}
	if err != nil {
		return nil, bodyError(syntaxMessage(err, dec))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, bodyError("must be a JSON object, got " + tokenKind(tok))
	}
	v, err := decodeFrom(dec, tok, "", 1)
	if err != nil {
		return nil, bodyError(syntaxMessage(err, dec))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, bodyError(fmt.Sprintf("has data after the JSON object (at byte %d)", dec.InputOffset()))
	}
	return v.(map[string]any), nil
}

// loneSurrogate finds a \uD800-\uDFFF escape that is not a high surrogate
// followed by a low one, and returns its offset, or -1. Backslashes occur
// only inside strings in JSON, so no string tracking is needed.
func loneSurrogate(body []byte) int {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 32)
		return rune(n), err == nil
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		r, ok := hex4(i)
		if !ok {
			i++ // an escaped character such as \\ or \"
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if low, ok := hex4(i + 6); ok && low >= 0xDC00 && low <= 0xDFFF {
				i += 11
				continue
			}
			return i
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		}
		i += 5
	}
	return -1
}

// decodeError is a structural problem found while decoding; its message is
// already for humans.
type decodeError struct{ msg string }

func (e *decodeError) Error() string { return e.msg }

func decodeFrom(dec *json.Decoder, tok json.Token, path string, depth int) (any, error) {
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, bool, json.Number or nil
	}
	if depth > maxDepth {
		return nil, &decodeError{fmt.Sprintf("is nested deeper than %d levels", maxDepth)}
	}
	switch d {
	case '{':
		m := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := kt.(string) // the decoder only yields string keys here
			keyPath := joinPath(path, key)
			if _, dup := m[key]; dup {
				return nil, &decodeError{fmt.Sprintf("has the key %q twice", Clip(keyPath))}
			}
			v, err := decodeNext(dec, keyPath, depth+1)
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
		_, err := dec.Token() // '}'
		return m, err
	default: // '['
		list := []any{}
		for i := 0; dec.More(); i++ {
			v, err := decodeNext(dec, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token() // ']'
		return list, err
	}
}

func decodeNext(dec *json.Decoder, path string, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	return decodeFrom(dec, tok, path, depth)
}

func syntaxMessage(err error, dec *json.Decoder) string {
	var de *decodeError
	if errors.As(err, &de) {
		return de.msg
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("is not valid JSON: %s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "is not valid JSON: it ends in the middle of a value"
	}
	return fmt.Sprintf("is not valid JSON: %s (at byte %d)", err.Error(), dec.InputOffset())
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func tokenKind(tok json.Token) string {
	if d, ok := tok.(json.Delim); ok && d == '[' {
		return "an array"
	}
	return jsonKind(tok)
}

// jsonKind names the JSON type of a decoded value for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

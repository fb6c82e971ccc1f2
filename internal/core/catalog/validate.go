package catalog

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/adapters/netguard"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// MaxURLLength bounds an image URL; signed storage URLs stay well below it.
const MaxURLLength = 4096

// dataImageTypes are the media types a data: URI image may carry.
var dataImageTypes = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}

// checkInput validates an input object against a variant and returns what
// the client sent with numeric enum values normalised to strings.
func checkInput(v Variant, input map[string]any, opts Options, p *Problems) map[string]any {
	out := make(map[string]any, len(input))
	p.Unknown("input.", input, v.FieldNames())
	for key, raw := range input {
		f, ok := v.Field(key)
		if !ok {
			continue // reported by Unknown
		}
		if val, ok := checkField(f, raw, opts, p); ok {
			out[key] = val
		}
	}
	for _, f := range v.Fields {
		if _, sent := input[f.Name]; f.Required && !sent {
			p.Add("input."+f.Name, "is required")
		}
	}
	checkDurationAgreement(v, out, p)
	return out
}

// checkField validates one value; the returned value is what Input keeps.
func checkField(f Field, raw any, opts Options, p *Problems) (any, bool) {
	name := "input." + f.Name
	bad := func(msg string) (any, bool) {
		p.Add(name, msg)
		return nil, false
	}
	switch f.Type {
	case TypeBoolean:
		b, ok := raw.(bool)
		if !ok {
			return bad("must be true or false, got " + jsonKind(raw))
		}
		return b, true
	case TypeEnum:
		s, ok := raw.(string)
		if n, isNum := raw.(json.Number); isNum {
			// The spec sends enums as strings; a number such as 4 is taken
			// as "4" when that is in the set (4.0 is not).
			s, ok = n.String(), true
		}
		if !ok || !slices.Contains(f.Enum, s) {
			return bad("must be one of " + quoteList(f.Enum))
		}
		return s, true
	case typeString:
		s, ok := raw.(string)
		if !ok {
			return bad("must be a string, got " + jsonKind(raw))
		}
		if f.Required && strings.TrimSpace(s) == "" {
			return bad("must not be empty")
		}
		if msg := lengthProblem(f, s); msg != "" {
			return bad(msg)
		}
		return s, true
	case TypeImage:
		s, ok := raw.(string)
		if !ok {
			return bad("must be a string holding an image URL or data URI, got " + jsonKind(raw))
		}
		if f.Required && strings.TrimSpace(s) == "" {
			return bad("must not be empty")
		}
		if msg := referenceProblem(s, opts); msg != "" {
			return bad(msg)
		}
		return s, true
	case TypeImageList:
		list, ok := raw.([]any)
		if !ok {
			return bad("must be an array of image URLs or data URIs, got " + jsonKind(raw))
		}
		maxItems := f.MaxItems
		if maxItems == 0 {
			maxItems = defaultMaxImages
		}
		if len(list) == 0 || len(list) > maxItems {
			return bad(fmt.Sprintf("must hold 1 to %d images, got %d", maxItems, len(list)))
		}
		valid := true
		for i, item := range list {
			s, ok := item.(string)
			msg := "must be a string holding an image URL or data URI, got " + jsonKind(item)
			if ok {
				msg = referenceProblem(s, opts)
			}
			if msg != "" {
				p.Add(fmt.Sprintf("%s[%d]", name, i), msg)
				valid = false
			}
		}
		return list, valid
	}
	return bad("has an unsupported type") // unreachable with the catalog's fields
}

func lengthProblem(f Field, s string) string {
	n := utf8.RuneCountInString(s)
	switch {
	case f.MinLen > 0 && f.MaxLen > 0 && (n < f.MinLen || n > f.MaxLen):
		return fmt.Sprintf("must be %d to %d characters long, got %d", f.MinLen, f.MaxLen, n)
	case f.MinLen > 0 && n < f.MinLen:
		return fmt.Sprintf("must be at least %d characters long, got %d", f.MinLen, n)
	case f.MaxLen > 0 && n > f.MaxLen:
		return fmt.Sprintf("must be at most %d characters long, got %d", f.MaxLen, n)
	}
	return ""
}

// checkDurationAgreement rejects a request whose length fields (duration and
// n_frames of beta-2-enchanted) disagree: the price would follow one and the
// provider perhaps the other.
func checkDurationAgreement(v Variant, input map[string]any, p *Problems) {
	first := ""
	for _, name := range durationFields {
		s, ok := input[name].(string)
		if !ok {
			continue
		}
		if first == "" {
			first = name
			continue
		}
		if s != input[first] {
			p.Add("input."+name, fmt.Sprintf("is %q but input.%s is %q; both set the length in seconds and must agree", s, first, input[first]))
		}
	}
}

// referenceProblem checks an image reference: an https URL to a public host,
// or a data:image URI of a supported type and size. "" means valid.
func referenceProblem(s string, opts Options) string {
	const want = "must be an https URL, a data:image/(png|jpeg|webp|gif);base64 URI or a file URL (mediagen://files/<file_id>)"
	if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
		return dataURIProblem(s, opts.maxDataURIBytes())
	}
	if domain.IsFileURL(s) {
		// The file itself is checked when the generation is created
		// (generation's files): it must be the caller's, and its bytes the
		// image type it was uploaded as.
		if _, ok := domain.ParseFileURL(s); !ok {
			return "file URL must be mediagen://files/<file_id>, with a file_id that POST /api/files made"
		}
		return ""
	}
	return urlProblem(s, opts, want)
}

// urlProblem checks a URL the service may fetch or call: https to a public
// host, or plain http to loopback where opts allow it. want is the message
// for a URL of the wrong form. "" means valid.
// URLProblem says what is wrong with s as a URL the service is to fetch
// (want names what it must be): https to a public host (plain http and
// loopback hosts too when opts.AllowLoopbackURLs), at most MaxURLLength
// characters, no user name; "" when nothing is.
func URLProblem(s string, opts Options, want string) string { return urlProblem(s, opts, want) }

func urlProblem(s string, opts Options, want string) string {
	if len(s) > MaxURLLength {
		return fmt.Sprintf("URL must be at most %d characters long", MaxURLLength)
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return want
	}
	host := u.Hostname()
	switch {
	case u.Scheme == "https" && host != "":
	case u.Scheme == "http" && opts.AllowLoopbackURLs && isLoopbackHost(host):
	case u.Scheme == "http":
		return want + "; plain http is not accepted"
	default:
		return want
	}
	if u.User != nil {
		return "URL must not carry a user name or password"
	}
	// Local use admits loopback only, never link-local or private hosts.
	if !isPublicHost(host) && !(opts.AllowLoopbackURLs && isLoopbackHost(host)) {
		return fmt.Sprintf("URL host %q is not a public address", Clip(host))
	}
	return ""
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && netguard.Loopback(ip)
}

// isPublicHost rejects hosts that name this machine or a private network:
// localhost, literal loopback/private/link-local/unspecified IPs, single-label
// names and numeric forms such as 2130706433 or 0x7f.1 that some resolvers
// read as IPs.
func isPublicHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return netguard.Public(ip)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || !strings.Contains(host, ".") {
		return false
	}
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	return !(strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") || strings.HasPrefix(labels[0], "0x"))
}

func dataURIProblem(s string, maxBytes int) string {
	header, payload, ok := strings.Cut(s, ",")
	mediaType, isBase64 := strings.CutSuffix(strings.ToLower(header[len("data:"):]), ";base64")
	if !ok || !isBase64 || !slices.Contains(dataImageTypes, mediaType) {
		return "data URI must be data:image/(png|jpeg|webp|gif);base64,<data>"
	}
	// Refuse a payload that is surely too large before decoding it; the
	// decoded length is at most 3 bytes below DecodedLen.
	if size := base64.StdEncoding.DecodedLen(len(payload)); size > maxBytes+3 {
		return fmt.Sprintf("data URI image must be at most %d bytes, got about %d", maxBytes, size)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "data URI is not valid base64"
	}
	if len(data) > maxBytes {
		return fmt.Sprintf("data URI image must be at most %d bytes, got %d", maxBytes, len(data))
	}
	// The provider cannot use bytes that are no image, whatever the URI says.
	if !slices.Contains(dataImageTypes, http.DetectContentType(data)) {
		return "data URI does not hold a PNG, JPEG, WebP or GIF image"
	}
	return ""
}

func quoteList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

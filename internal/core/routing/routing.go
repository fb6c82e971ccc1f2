// Package routing reads the routing file: which upstreams exist (their
// protocol, API root, where their token comes from, which hosts serve their
// outputs, how many jobs they take at once) and, for every variant of the
// catalog, the ordered routes that may run it (upstream, model, field
// renames, constants and types). Routing is data: the same code runs a
// variant on the built-in simulator, on Replicate or on fal.
package routing

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
)

// Protocols an upstream speaks.
const (
	ProtocolReplicate = "replicate"
	ProtocolFal       = "fal"
)

// Builtin is the base_url of an upstream served by the local runtime's own
// simulator; the runtime puts the simulator's address and token in its
// place (Bind), and a Lambda refuses it.
const Builtin = "builtin:simulator"

// Field types a route may give an upstream field.
var fieldTypes = []string{"integer", "number", "boolean", "string"}

//go:embed default.json
var defaultFile []byte

// Upstream is one hosted API that runs jobs.
type Upstream struct {
	Name     string `json:"-"`
	Protocol string `json:"protocol"`
	// BaseURL is the API root as the official clients take it.
	BaseURL string `json:"base_url"`
	// TokenEnv names the environment variable holding the token (local
	// runs); in AWS the tokens come from one secret keyed by upstream name.
	TokenEnv string `json:"token_env"`
	// OutputHosts are the hosts outputs may be fetched from; "*.example.net"
	// allows every subdomain of example.net.
	OutputHosts []string `json:"output_hosts"`
	// MaxConcurrent caps the jobs running at once here; 0 is no cap.
	MaxConcurrent int `json:"max_concurrent"`
	// WebhookSecretEnv optionally names a variable holding the Replicate
	// webhook signing secret; unset, it is fetched from the API.
	WebhookSecretEnv string `json:"webhook_secret_env,omitempty"`
	// JWKSURL is where fal publishes its webhook keys; default fal's own.
	JWKSURL string `json:"jwks_url,omitempty"`
}

// Route is one way to run a variant.
type Route struct {
	Upstream string `json:"upstream"`
	// Model is "owner/name" or "owner/name:version" (Replicate), or a fal
	// app id ("owner/alias" with an optional sub-path).
	Model string `json:"model"`
	// Rename maps our input fields to the upstream's names; the key
	// "image_count" names the upstream's image count field.
	Rename map[string]string `json:"rename,omitempty"`
	// Set adds constants to the upstream input.
	Set map[string]any `json:"set,omitempty"`
	// Types gives upstream fields their JSON type.
	Types map[string]string `json:"types,omitempty"`
}

// Config is a parsed, checked routing file.
type Config struct {
	Upstreams map[string]*Upstream `json:"upstreams"`
	// Variants maps "<model>/<model_version>" to its routes, tried in order.
	Variants map[string][]Route `json:"variants"`
}

// DefaultFile is the embedded routing file: every variant on the built-in
// simulator.
func DefaultFile() []byte { return bytes.Clone(defaultFile) }

// Default is the embedded routing file, parsed.
func Default() *Config {
	c, err := parse(defaultFile)
	if err != nil {
		panic("routing: the embedded default file is broken: " + err.Error())
	}
	return c
}

// Load reads the routing file at path; "" is the embedded default.
func Load(path string) (*Config, error) {
	if path == "" {
		return Default(), nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("routing file: %w", err)
	}
	c, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("routing file %s: %w", path, err)
	}
	return c, nil
}

var (
	upstreamName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// replicateModel is owner/name with an optional :version.
	replicateModel = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(:[A-Za-z0-9]+)?$`)
	// falApp is owner/alias with optional sub-path segments.
	falApp = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)+$`)
)

// parse decodes and checks a routing file. The error is one line naming the
// first problem found.
func parse(raw []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("not a routing file: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not a routing file: data after the JSON object")
	}
	if len(c.Upstreams) == 0 {
		return nil, errors.New("no upstreams")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Upstreams)) {
		u := c.Upstreams[name]
		if u == nil {
			return nil, fmt.Errorf("upstream %q is null", name)
		}
		u.Name = name
		if err := u.check(); err != nil {
			return nil, fmt.Errorf("upstream %q: %w", name, err)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.Variants)) {
		if _, err := lookupVariant(key); err != nil {
			return nil, fmt.Errorf("variant %q is not in the catalog", key)
		}
	}
	for _, v := range catalog.All() {
		key := v.Model + "/" + v.Version
		routes := c.Variants[key]
		if len(routes) == 0 {
			return nil, fmt.Errorf("variant %s has no route", key)
		}
		for i, r := range routes {
			if err := c.checkRoute(r); err != nil {
				return nil, fmt.Errorf("variant %s, route %d: %w", key, i+1, err)
			}
		}
	}
	return &c, nil
}

func (u *Upstream) check() error {
	if !upstreamName.MatchString(u.Name) {
		return errors.New("the name must be lowercase letters, digits, - or _")
	}
	switch u.Protocol {
	case ProtocolReplicate, ProtocolFal:
	default:
		return fmt.Errorf("protocol %q is not %q or %q", u.Protocol, ProtocolReplicate, ProtocolFal)
	}
	if u.BaseURL != Builtin {
		b, err := url.Parse(u.BaseURL)
		if err != nil || (b.Scheme != "https" && b.Scheme != "http") || b.Host == "" || b.RawQuery != "" || b.Fragment != "" || b.User != nil {
			return fmt.Errorf("base_url %q is not an http(s) URL without query or credentials", u.BaseURL)
		}
		if u.TokenEnv == "" || !envName.MatchString(u.TokenEnv) {
			return fmt.Errorf("token_env %q is not an environment variable name", u.TokenEnv)
		}
		if len(u.OutputHosts) == 0 {
			return errors.New("output_hosts is empty: name the hosts that serve its outputs")
		}
	}
	for _, h := range u.OutputHosts {
		if !validOutputHost(h) {
			return fmt.Errorf("output host %q is not a host name or *.domain, with an optional :port", h)
		}
	}
	if u.MaxConcurrent < 0 {
		return fmt.Errorf("max_concurrent %d is negative", u.MaxConcurrent)
	}
	if u.WebhookSecretEnv != "" && !envName.MatchString(u.WebhookSecretEnv) {
		return fmt.Errorf("webhook_secret_env %q is not an environment variable name", u.WebhookSecretEnv)
	}
	if u.JWKSURL != "" && u.Protocol != ProtocolFal {
		return errors.New("jwks_url is for fal upstreams")
	}
	return nil
}

func (c *Config) checkRoute(r Route) error {
	u, ok := c.Upstreams[r.Upstream]
	if !ok {
		return fmt.Errorf("unknown upstream %q (known: %s)", r.Upstream, strings.Join(slices.Sorted(maps.Keys(c.Upstreams)), ", "))
	}
	switch u.Protocol {
	case ProtocolReplicate:
		if !replicateModel.MatchString(r.Model) {
			return fmt.Errorf("model %q is not owner/name or owner/name:version", r.Model)
		}
	case ProtocolFal:
		if !falApp.MatchString(r.Model) {
			return fmt.Errorf("model %q is not a fal app id (owner/alias[/path])", r.Model)
		}
	}
	for from, to := range r.Rename {
		if from == "" || to == "" {
			return errors.New("rename has an empty field name")
		}
	}
	for field, t := range r.Types {
		if !slices.Contains(fieldTypes, t) {
			return fmt.Errorf("types.%s is %q, not one of %s", field, t, strings.Join(fieldTypes, ", "))
		}
	}
	return nil
}

// Routes are a variant's routes in order.
func (c *Config) Routes(model, version string) []Route {
	return slices.Clone(c.Variants[model+"/"+version])
}

// Upstream is the named upstream.
func (c *Config) Upstream(name string) (*Upstream, bool) {
	u, ok := c.Upstreams[name]
	return u, ok
}

// Names lists the upstreams, sorted.
func (c *Config) Names() []string { return slices.Sorted(maps.Keys(c.Upstreams)) }

// OutputHosts lists every upstream's output hosts.
func (c *Config) OutputHosts() []string {
	var out []string
	for _, name := range c.Names() {
		for _, h := range c.Upstreams[name].OutputHosts {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// validOutputHost accepts "host", "*.domain", and either with ":port" (the
// copier admits the scheme's default port when none is given).
func validOutputHost(h string) bool {
	host := h
	if hp, port, err := net.SplitHostPort(h); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return false
		}
		host = hp
	}
	if net.ParseIP(strings.Trim(host, "[]")) != nil {
		return true
	}
	bare := strings.TrimPrefix(host, "*.")
	return bare != "" && !strings.ContainsAny(bare, "/*:@ []") && !strings.HasPrefix(bare, ".")
}

// UsesBuiltin reports whether an upstream is the local runtime's simulator.
func (c *Config) UsesBuiltin() bool {
	for _, u := range c.Upstreams {
		if u.BaseURL == Builtin {
			return true
		}
	}
	return false
}

// Bind puts the built-in simulator's addresses in place of Builtin: its
// Replicate face, its fal face and its files host.
func (c *Config) Bind(replicateBase, falBase, filesHost string) {
	for _, u := range c.Upstreams {
		if u.BaseURL != Builtin {
			continue
		}
		u.BaseURL = replicateBase
		if u.Protocol == ProtocolFal {
			u.BaseURL = falBase
			if u.JWKSURL == "" {
				u.JWKSURL = strings.TrimSuffix(falBase, "/") + "/.well-known/jwks.json"
			}
		}
		if !slices.Contains(u.OutputHosts, filesHost) {
			u.OutputHosts = append(u.OutputHosts, filesHost)
		}
	}
}

// lookupVariant finds a catalog variant by "<model>/<model_version>".
func lookupVariant(key string) (catalog.Variant, error) {
	model, version, ok := strings.Cut(key, "/")
	if !ok {
		return catalog.Variant{}, catalog.ErrUnknownVariant
	}
	return catalog.Lookup(model, version)
}

// Single routes every variant to one upstream, under the model name
// "<model>/<model_version>" (the simulator's names): for tests and
// examples.
func Single(name, protocol, baseURL string, outputHosts []string) *Config {
	c := &Config{Upstreams: map[string]*Upstream{name: {Name: name, Protocol: protocol, BaseURL: baseURL,
		TokenEnv: "UPSTREAM_TOKEN", OutputHosts: outputHosts}}, Variants: map[string][]Route{}}
	for _, v := range catalog.All() {
		c.Variants[v.Model+"/"+v.Version] = []Route{{Upstream: name, Model: v.Model + "/" + v.Version}}
	}
	return c
}

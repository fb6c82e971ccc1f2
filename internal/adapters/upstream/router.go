package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

var (
	_ Provider = (*Replicate)(nil)
	_ Provider = (*fal)(nil)
)

// Router holds one provider per upstream of a routing file.
type Router struct {
	Routing   *routing.Config
	providers map[string]Provider
}

// Tokens gives each upstream's token by its name.
type Tokens func(upstream *routing.Upstream) (string, error)

// NewRouter builds each upstream's client. secrets gives the webhook
// signing secret configured for an upstream ("" to fetch it).
func NewRouter(cfg *routing.Config, tokens Tokens, secrets func(*routing.Upstream) string, t Tuning) (*Router, error) {
	r := &Router{Routing: cfg, providers: map[string]Provider{}}
	for _, name := range cfg.Names() {
		u := cfg.Upstreams[name]
		if u.BaseURL == routing.Builtin {
			return nil, fmt.Errorf("upstream %q is the built-in simulator, which only the local runtime has: set a routing file", name)
		}
		token, err := tokens(u)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: %w", name, err)
		}
		switch u.Protocol {
		case routing.ProtocolReplicate:
			c := &Replicate{BaseURL: u.BaseURL, Token: token, Tuning: t}
			if secrets != nil {
				c.WebhookSecret = secrets(u)
			}
			r.providers[name] = c
		case routing.ProtocolFal:
			r.providers[name] = &fal{BaseURL: u.BaseURL, Token: token, JWKSURL: u.JWKSURL, Tuning: t}
		}
	}
	return r, nil
}

// Wrap replaces every provider by wrap(name, provider) (tests wrap them
// with faults).
func (r *Router) Wrap(wrap func(name string, p Provider) Provider) {
	for name, p := range r.providers {
		r.providers[name] = wrap(name, p)
	}
}

// errUnknownUpstream is an upstream name the routing file does not have.
var errUnknownUpstream = errors.New("unknown upstream")

// Provider is the named upstream's client.
func (r *Router) Provider(name string) (Provider, error) {
	p, ok := r.providers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", errUnknownUpstream, name)
	}
	return p, nil
}

// Routes are a variant's routes in order.
func (r *Router) Routes(model, version string) []routing.Route {
	return r.Routing.Routes(model, version)
}

// Limit is the named upstream's cap on jobs at once (0: none).
func (r *Router) Limit(name string) int {
	if u, ok := r.Routing.Upstream(name); ok {
		return u.MaxConcurrent
	}
	return 0
}

// Plans maps a request onto each of its variant's routes, in order: the
// upstream input, typed, and how many jobs run it. A route whose schema
// cannot be read is left out (it started nothing); a value no route can
// type is a *routing.ConvertError.
func (r *Router) Plans(ctx context.Context, v catalog.Variant, resolved map[string]any, imageCount int) ([]routing.Plan, error) {
	var plans []routing.Plan
	var lastErr error
	for _, route := range r.Routing.Routes(v.Model, v.Version) {
		p, err := r.Provider(route.Upstream)
		if err != nil {
			return nil, err
		}
		schema, err := p.InputTypes(ctx, route.Model)
		if err != nil {
			lastErr = &atError{Upstream: route.Upstream, Err: fmt.Errorf("%w: schema of %s: %v", ErrNotStarted, route.Model, err)}
			continue
		}
		plan, err := route.Input(v, resolved, imageCount, schema)
		if err != nil {
			return nil, err
		}
		plans = append(plans, plan)
	}
	if len(plans) == 0 {
		if lastErr == nil {
			lastErr = fmt.Errorf("%w: %s/%s has no route", ErrNotStarted, v.Model, v.Version)
		}
		return nil, lastErr
	}
	return plans, nil
}

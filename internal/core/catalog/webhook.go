package catalog

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// WebhookFields are the optional body fields that ask for a webhook.
var WebhookFields = []string{"webhook_url", "webhook_events"}

// CheckWebhook reads webhook_url and webhook_events from a create body:
// an https URL on a public host (plain http on loopback only where opts
// allow it) and a list of events, by default all of them.
func CheckWebhook(obj map[string]any, events []string, opts Options, p *Problems) domain.Webhook {
	var w domain.Webhook
	raw, hasURL := obj["webhook_url"]
	if hasURL {
		s, ok := raw.(string)
		switch {
		case !ok:
			p.Add("webhook_url", "must be a string, got "+jsonKind(raw))
		case len(s) >= 5 && strings.EqualFold(s[:5], "data:"):
			p.Add("webhook_url", "must be an https URL")
		default:
			msg := urlProblem(s, opts, "must be an https URL")
			if msg == "" {
				msg = loopbackPortProblem(s, opts)
			}
			if msg != "" {
				p.Add("webhook_url", msg)
			} else {
				w.URL = s
			}
		}
	}
	rawEvents, hasEvents := obj["webhook_events"]
	if !hasEvents {
		return w
	}
	if !hasURL {
		p.Add("webhook_events", "needs webhook_url")
	}
	list, ok := rawEvents.([]any)
	if !ok || len(list) == 0 {
		p.Add("webhook_events", "must be a non-empty list of: "+strings.Join(events, ", "))
		return w
	}
	for i, e := range list {
		s, ok := e.(string)
		if !ok || !slices.Contains(events, s) {
			p.Add(fmt.Sprintf("webhook_events[%d]", i), "must be one of: "+strings.Join(events, ", "))
			continue
		}
		if !slices.Contains(w.Events, s) {
			w.Events = append(w.Events, s)
		}
	}
	return w
}

// loopbackPortProblem refuses a webhook URL (already checked by
// urlProblem) on this machine whose port is not one of
// opts.WebhookLoopbackPorts.
func loopbackPortProblem(s string, opts Options) string {
	u, err := url.Parse(s)
	if err != nil || !isLoopbackHost(u.Hostname()) {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return "URL port must be a number from 1 to 65535"
	}
	if slices.Contains(opts.WebhookLoopbackPorts, uint16(n)) {
		return ""
	}
	return fmt.Sprintf("port %d of this machine is not open to webhooks (serve --webhook-allow 127.0.0.1:%d opens it)", n, n)
}

package domain

// The classes of a failed attempt, as the record's webhook.attempts show
// them. A class names what went wrong and never the address, port or the
// system's error text, nor how a port failed: refused, reset, silent or
// speaking something else all read could_not_connect, so that a key
// holder cannot map the network the service runs in (which ports answer,
// and how) from the attempts.
const (
	WebhookErrorHTTPStatus       = "http_status"        // the receiver answered, not with 2xx (status_code says which)
	WebhookErrorCouldNotConnect  = "could_not_connect"  // no HTTP answer came: not connected, cut off, or no answer in time
	WebhookErrorAddressNotPublic = "address_not_public" // the URL's host resolves to a private address, or a loopback port not allowed
	WebhookErrorDNS              = "dns_error"          // the host name does not resolve
	WebhookErrorTLS              = "tls_error"          // the receiver's certificate was refused
)

// WebhookErrorClasses lists every class, in the order the API documents them.
var WebhookErrorClasses = []string{WebhookErrorHTTPStatus, WebhookErrorCouldNotConnect, WebhookErrorAddressNotPublic, WebhookErrorDNS, WebhookErrorTLS}

// CurrentWebhookErrorClass is the class a stored attempt's error reads as today:
// records from before could_not_connect name how a port failed
// (connection_refused, connection_reset, timeout, request_failed), which
// the views no longer tell.
func CurrentWebhookErrorClass(stored string) string {
	switch stored {
	case "connection_refused", "connection_reset", "timeout", "request_failed":
		return WebhookErrorCouldNotConnect
	}
	return stored
}

// The webhook events each kind of record sends, one per final status.
var (
	GenerationEvents = []string{"generation.completed", "generation.failed", "generation.canceled"}
	LongVideoEvents  = []string{"long_video.completed", "long_video.failed", "long_video.canceled"}
)

// Attempted says whether attempts list one at event: the deliverer has the
// event, so enqueueing it again would only be dropped (a regenerate's
// revision is an event of its own that this does not tell apart).
func Attempted(attempts []WebhookAttempt, event string) bool {
	for _, a := range attempts {
		if a.Event == event {
			return true
		}
	}
	return false
}

// FinalEvent is the webhook event of a record of kind that ended with
// status: "generation.completed", "long_video.failed", ...
func FinalEvent(kind WorkKind, status Status) string { return string(kind) + "." + string(status) }

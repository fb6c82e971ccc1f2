package runtime

import (
	"flag"
	"os"
	"time"
)

// CommonFlags registers on fs the flags that every way of running the
// service on this machine shares (mediagen serve, mediagen-dev lambdas),
// each meaning the same in both: where the API listens and the data is
// kept, the simulator's latency, the routing file, the public URL, the
// webhook receivers allowed on loopback and the log level.
func CommonFlags(fs *flag.FlagSet, cfg *Config) (logLevel *string) {
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address of the HTTP API (loopback unless serve's --allow-remote)")
	fs.StringVar(&cfg.DataDir, "data", ".mediagen", "data directory: store, outputs, dev account (the deployed shape's builds and logs in <data>/lambdas)")
	fs.DurationVar(&cfg.SimulatorLatency, "sim-latency", 300*time.Millisecond, "upstream simulator latency before rendering")
	fs.StringVar(&cfg.RoutingFile, "routing", os.Getenv("ROUTING_FILE"), "routing file: which upstream runs each variant (default: the embedded one, every variant on the built-in simulator)")
	fs.StringVar(&cfg.PublicBaseURL, "public-url", os.Getenv("PUBLIC_BASE_URL"), "where an upstream off this machine can call back (a tunnel to --addr; the template's PublicBaseUrl); without it they complete by polling")
	fs.Func("webhook-allow", "a webhook receiver on this machine, HOST:PORT (repeatable): webhooks may reach these loopback ports and no other (default: none)", func(s string) error {
		if _, err := ParseWebhookAllow(s); err != nil {
			return err
		}
		cfg.WebhookAllow = append(cfg.WebhookAllow, s)
		return nil
	})
	return fs.String("log-level", "info", "debug, info, warn or error")
}

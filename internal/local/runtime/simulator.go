package runtime

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
)

// SimulatorConfig starts a simulator on addresses of its own.
type SimulatorConfig struct {
	// Addr is its API's address (default 127.0.0.1:0).
	Addr    string
	Latency time.Duration
	// WorkDir keeps its predictions and outputs; empty is a temporary
	// folder, not kept.
	WorkDir string
	// FilesAddr is where its files origin listens (default: 127.0.0.2 on
	// Addr's port, so that a fixed Addr fixes it too; where the loopback
	// has no 127.0.0.2, "localhost" on Addr's port + 1; 0 stays 0).
	FilesAddr string
	// CADir keeps the files origin's CA (ca.pem and its key), so that a
	// client trusting it keeps doing so across restarts; empty makes one
	// in memory only.
	CADir string
	// HTTPFiles serves the files over plain http, for `mediagen-dev lambdas`:
	// the functions there, as in Lambda, trust only the system's CAs.
	HTTPFiles bool
	Log       *slog.Logger
}

// Simulator is the upstream simulator serving on its own loopback
// addresses: its API (the Replicate face at BaseURL, the fal face at
// FalURL) and, on another host, its files.
type Simulator struct {
	*simulator.Simulator
	// BaseURL is the Replicate face's API root (clients add /v1).
	BaseURL string
	// FalURL is the fal face's queue root (what https://queue.fal.run is).
	FalURL string
	// FilesHost ("host:port") serves the outputs: another host than the
	// API's. FilesURL is its root: https with a certificate CA signs
	// (http with HTTPFiles).
	FilesHost string
	FilesURL  string
	// CA signs the files origin's certificate (nil with HTTPFiles); its
	// File is what NODE_EXTRA_CA_CERTS or SSL_CERT_FILE names.
	CA    *simulator.CA
	Token string

	api, files *http.Server
}

// Variants of the simulator that take no image count, as many hosted image
// models do: the service runs one job per image for them.
var noCountModels = []string{"theta-4-fast", "iota-v3-turbo"}

// SimulatorModels are the simulator's models: each catalog variant as
// "<model>/<model_version>", with the input types it publishes (integer
// enums as integers, booleans, image lists as arrays) and an image count
// field (num_outputs, or zeta-pro's own num_images) except for
// noCountModels.
func SimulatorModels() (kinds map[string]string, inputs map[string]map[string]string, clips map[string]float64) {
	kinds, inputs, clips = map[string]string{}, map[string]map[string]string{}, map[string]float64{}
	for _, v := range catalog.All() {
		name := v.Model + "/" + v.Version
		kinds[name] = string(v.Kind)
		if v.FixedDurationSeconds > 0 {
			clips[name] = float64(v.FixedDurationSeconds)
		}
		types := map[string]string{}
		for _, f := range v.Fields {
			switch f.Type {
			case catalog.TypeBoolean:
				types[f.Name] = "boolean"
			case catalog.TypeImageList:
				types[f.Name] = "array"
			case catalog.TypeEnum:
				types[f.Name] = "integer"
				for _, e := range f.Enum {
					if _, err := strconv.Atoi(e); err != nil {
						types[f.Name] = "string"
					}
				}
			default:
				types[f.Name] = "string"
			}
		}
		if v.Kind == domain.MediaImage && !slices.Contains(noCountModels, v.Version) {
			if _, ok := types["num_images"]; !ok {
				types["num_outputs"] = "integer"
			}
		}
		inputs[name] = types
	}
	return kinds, inputs, clips
}

// StartSimulator serves a simulator on its own loopback addresses: the API
// on cfg.Addr, the files on 127.0.0.2 (or, where that address is missing,
// on "localhost", a host name other than the API's).
func StartSimulator(cfg SimulatorConfig) (*Simulator, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	apiLn, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("simulator: listen on %s: %w", cfg.Addr, err)
	}
	apiPort := apiLn.Addr().(*net.TCPAddr).Port
	if _, p, err := net.SplitHostPort(cfg.Addr); err == nil && p == "0" {
		apiPort = 0 // a port of the system's choosing: the files' too
	}
	filesLn, filesHost, err := listenFiles(cfg.FilesAddr, apiPort)
	if err != nil {
		apiLn.Close()
		return nil, err
	}
	var ca *simulator.CA
	scheme := "http"
	if !cfg.HTTPFiles {
		tlsCfg, c, err := filesTLS(cfg.CADir, filesHost)
		if err != nil {
			apiLn.Close()
			filesLn.Close()
			return nil, err
		}
		ca, scheme, filesLn = c, "https", tls.NewListener(filesLn, tlsCfg)
	}
	token, err := randomToken()
	if err != nil {
		apiLn.Close()
		filesLn.Close()
		return nil, err
	}
	kinds, inputs, clips := SimulatorModels()
	base := "http://" + apiLn.Addr().String()
	filesHost = net.JoinHostPort(filesHost, strconv.Itoa(filesLn.Addr().(*net.TCPAddr).Port))
	filesBase := scheme + "://" + filesHost
	sim, err := simulator.New(simulator.Config{
		Token: token, Latency: cfg.Latency, BaseURL: base, FilesBaseURL: filesBase, Models: kinds, Inputs: inputs,
		ClipSeconds: clips, WorkDir: cfg.WorkDir, Persist: cfg.WorkDir != "", Logger: cfg.Log,
		WebhookSecret: webhook.NewSecret(),
	})
	if err != nil {
		apiLn.Close()
		filesLn.Close()
		return nil, fmt.Errorf("start the upstream simulator: %w", err)
	}
	s := &Simulator{Simulator: sim, BaseURL: base, FalURL: base + "/fal", FilesHost: filesHost, FilesURL: filesBase, CA: ca, Token: token,
		api:   &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second},
		files: &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}}
	for srv, ln := range map[*http.Server]net.Listener{s.api: apiLn, s.files: filesLn} {
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cfg.Log.Error("simulator server stopped", "error", err)
			}
		}()
	}
	return s, nil
}

// listenFiles listens where the outputs are served: addr when given, else
// 127.0.0.2 on the API's port where the loopback has it (Linux), else
// 127.0.0.1 named "localhost" on the API's port + 1 (a port 0 stays 0).
// It answers the host name the URLs use.
func listenFiles(addr string, apiPort int) (net.Listener, string, error) {
	if addr != "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, "", fmt.Errorf("simulator files address %q: %w", addr, err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", fmt.Errorf("simulator files: listen on %s: %w", addr, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "localhost"
		}
		return ln, host, nil
	}
	if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(apiPort))); err == nil {
		return ln, "127.0.0.2", nil
	}
	port := 0
	if apiPort != 0 {
		port = apiPort + 1
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, "", fmt.Errorf("simulator files: %w", err)
	}
	return ln, "localhost", nil
}

// filesTLS loads (or makes) the CA kept in dir and a certificate it signs
// for the files host and the loopback names.
func filesTLS(dir, host string) (*tls.Config, *simulator.CA, error) {
	ca, err := simulator.LoadOrCreateCA(dir)
	if err != nil {
		return nil, nil, err
	}
	hosts := []string{"localhost", "127.0.0.1", "127.0.0.2", "::1"}
	if !slices.Contains(hosts, host) {
		hosts = append(hosts, host)
	}
	cfg, err := ca.ServerTLS(hosts...)
	if err != nil {
		return nil, nil, err
	}
	return cfg, ca, nil
}

// trust is the CAs the output copier trusts: the system's, the
// simulator's and extra (nil, the system's alone, when there is nothing
// to add: no simulator, or its files on http).
func (s *Simulator) trust(extra []*x509.Certificate) *x509.CertPool {
	if s != nil && s.CA != nil {
		extra = append(extra, s.CA.Cert)
	}
	if len(extra) == 0 {
		return nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, c := range extra {
		pool.AddCert(c)
	}
	return pool
}

// Bind points the routing file's built-in upstreams at this simulator.
func (s *Simulator) Bind(r *routing.Config) { r.Bind(s.BaseURL, s.FalURL, s.FilesHost) }

// Close stops serving and every job.
func (s *Simulator) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range []*http.Server{s.api, s.files} {
		if srv.Shutdown(ctx) != nil {
			srv.Close() // the deadline passed: cut what is left
		}
	}
	s.Simulator.Close()
}

// tokens gives each upstream's token: the simulator's for the built-in
// one, else the environment variable the upstream names.
func tokens(sim *Simulator) func(u *routing.Upstream) (string, error) {
	return func(u *routing.Upstream) (string, error) {
		if sim != nil && (u.BaseURL == sim.BaseURL || u.BaseURL == sim.FalURL) {
			return sim.Token, nil
		}
		if v := os.Getenv(u.TokenEnv); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("environment variable %s (its token) is not set", u.TokenEnv)
	}
}

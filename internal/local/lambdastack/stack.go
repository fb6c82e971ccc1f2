// Package lambdastack runs the deployed shape on one machine (`mediagen
// mediagen-dev lambdas`): template.yaml as aws-sam-translator expands it for
// `sam deploy`, its tables, queues, bucket and secret made in moto's
// server with IAM enforced, each function's built bootstrap run as
// processes of its own behind an emulated Lambda Runtime API with exactly
// the template's environment, timeout and memory and its own role's
// credentials, the HTTP API's routes and authorizer from the expanded
// OpenAPI body, and the SQS event source mappings and schedules polling
// and invoking as Lambda's service does. Local only: no Lambda imports it.
package lambdastack

import (
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mediagen-dev/mediagen/deploy"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
	"github.com/mediagen-dev/mediagen/internal/local/lambdaruntime"
)

// Config is what start needs.
type Config struct {
	// Root is the repository (template.yaml, the Makefile, functions/).
	Root string
	// Dir keeps the run: the functions' task roots and logs, moto's logs.
	Dir string
	// CacheDir keeps the built bootstraps between runs (defaultCacheDir).
	CacheDir string
	// Addr is the HTTP API's listen address (default 127.0.0.1:0).
	Addr string
	// StackName names the resources (default mediagen-local).
	StackName string
	// Parameters override the template's parameter defaults. PublicBaseUrl,
	// when not given, is the HTTP API's own URL (BaseURL, the port the
	// API listens on): the provider's callbacks on, as serve has them.
	Parameters map[string]string
	// RoutingFile is the routing file put in every function's package as
	// routing.json (what sam build copies from the repository's root).
	RoutingFile []byte
	// Secrets are the values put in the template's secrets by logical ID
	// (the upstream tokens), as an operator does after deploying.
	Secrets map[string]string
	// MediaHost is what the CDN's domain name resolves to (the outputs'
	// origin, host:port).
	MediaHost string
	// WebhookLoopbackPorts are the ports of this machine a webhook_url may
	// name and a delivery reach (serve --webhook-allow): they fill the
	// template's WEBHOOK_LOOPBACK_PORTS, empty in AWS.
	WebhookLoopbackPorts []uint16
	// GatewayNow is the clock of the authorizer's cache (default the wall
	// clock): a test moves it past the cache's TTL rather than wait.
	GatewayNow func() time.Time
	// Edit, when set, may change the expanded template before anything is
	// made from it (a test removes a permission with it).
	Edit func(doc map[string]any)
	// Log gets the stack's own logs; Progress a line per step.
	Log      *slog.Logger
	Progress io.Writer
}

// Stack is the running deployed shape.
type Stack struct {
	cfg  Config
	doc  map[string]any
	res  *resolver
	Moto *Moto
	// BaseURL is the HTTP API's URL.
	BaseURL string
	// FunctionURLs are the template's function URLs (AWS::Lambda::Url) by
	// logical ID, each on a listener of its own (functionurl.go).
	FunctionURLs map[string]string
	urlServers   []*http.Server

	admin     creds
	roles     map[string]roleInfo
	functions map[string]*Function
	// schedules are the scheduled rules' targets by the rule's logical ID.
	schedules map[string][]*Function
	made      []string
	server    *http.Server
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	logFiles  []*os.File

	// machines are the state machines the ASL runner runs, rules the
	// event rules on their executions' ends (statemachine.go,
	// eventrules.go); runCtx lives until Close, closing is set as it
	// starts, under closeMu, which orders it against putEvent's wg.Add
	// (no Add after Close's wg.Wait has begun).
	// cors is each bucket's CORS rule, from the template, which the
	// stack answers preflights with (presigned.go).
	cors map[string]*objectstore.CORSRule
	// pollyCharacters counts what Polly bills (polly.go).
	pollyCharacters atomic.Int64

	machines map[string]*StateMachine
	rules    []patternRule
	runCtx   context.Context
	closeMu  sync.Mutex
	closing  atomic.Bool
}

type roleInfo struct {
	name  string
	creds creds
}

// Function is one function of the stack.
type Function struct {
	// Logical is its logical ID; Name its function name.
	Logical, Name string
	// Role is its execution role's name.
	Role string
	// LogPath is the file its processes write to (its CloudWatch log).
	LogPath string
	// Timeout and MemoryMB are the template's.
	Timeout  time.Duration
	MemoryMB int
	pool     *lambdaruntime.Pool
	// chain is the most invocations of the function in one chain of
	// requests that Lambda counted (its trace header's lineage).
	chain atomic.Int64
}

// ChainDepth is the most times one chain of requests (one X-Ray trace)
// invoked the function, as Lambda's recursive-loop guard counts them in the
// trace header's lineage: above localsqs.MaxChainInvocations only when
// its RecursiveLoop is Allow.
func (f *Function) ChainDepth() int { return int(f.chain.Load()) }

func (f *Function) noteChain(n int) {
	for {
		cur := f.chain.Load()
		if int64(n) <= cur || f.chain.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// Invocations is how many times the function was invoked.
func (f *Function) Invocations() int { return f.pool.Invocations() }

// PIDs are the process ids of its live environments.
func (f *Function) PIDs() []int {
	var out []int
	for _, env := range f.pool.Environments() {
		out = append(out, env.PID())
	}
	slices.Sort(out)
	return out
}

// Invoke invokes the function synchronously with payload, as the Lambda
// Invoke API does: the answer, or the function's error (a
// *lambdaruntime.FunctionError: its own, Sandbox.Timedout,
// Runtime.ExitError), or why it was not invoked.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f.invokeTraced(ctx, payload, "")
}

// invokeTraced is Invoke with the invocation's X-Ray trace header ("" for
// a trace of its own).
func (f *Function) invokeTraced(ctx context.Context, payload []byte, trace string) ([]byte, error) {
	inv, err := f.pool.InvokeTraced(ctx, payload, trace)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", f.Logical, err)
	}
	if inv.Err != nil {
		return nil, fmt.Errorf("%s: %w", f.Logical, inv.Err)
	}
	return inv.Response, nil
}

// start makes the stack and serves its HTTP API; Close ends it all.
func start(ctx context.Context, cfg Config) (_ *Stack, err error) {
	if cfg.StackName == "" {
		cfg.StackName = "mediagen-local"
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = defaultCacheDir()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, roles: map[string]roleInfo{}, functions: map[string]*Function{}, schedules: map[string][]*Function{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel, s.runCtx = cancel, runCtx

	fmt.Fprintln(cfg.Progress, "expanding template.yaml with aws-sam-translator…")
	if s.doc, err = deploy.Expand(ctx, filepath.Join(cfg.Root, "template.yaml")); err != nil {
		return nil, err
	}
	if cfg.Edit != nil {
		cfg.Edit(s.doc)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("the HTTP API: listen on %s: %w", cfg.Addr, err)
	}
	s.BaseURL = "http://" + ln.Addr().String()
	s.cfg.Parameters = maps.Clone(s.cfg.Parameters)
	if s.cfg.Parameters == nil {
		s.cfg.Parameters = map[string]string{}
	}
	if _, set := s.cfg.Parameters["PublicBaseUrl"]; !set {
		// The listener's own port: no port picked, closed and bound again
		// later, which another process can take in between.
		s.cfg.Parameters["PublicBaseUrl"] = s.BaseURL
	}
	if s.res, err = newResolver(s.doc, cfg.StackName, region, accountID, s.cfg.Parameters); err != nil {
		ln.Close()
		return nil, err
	}

	// The bootstraps build while moto starts.
	logicals := s.resourcesOfType("AWS::Lambda::Function")
	type built struct {
		paths map[string]string
		err   error
	}
	builds := make(chan built, 1)
	go func() {
		fmt.Fprintf(cfg.Progress, "building %d bootstraps (cache %s)…\n", len(logicals), cfg.CacheDir)
		p, err := buildBootstraps(ctx, cfg.Root, cfg.CacheDir, logicals, cfg.Progress)
		builds <- built{p, err}
	}()

	access, err := s.logFile("moto-access.log")
	if err != nil {
		ln.Close()
		return nil, err
	}
	serverLog, err := s.logFile("moto.log")
	if err != nil {
		ln.Close()
		return nil, err
	}
	if s.Moto, err = startMoto(ctx, access, serverLog); err != nil {
		ln.Close()
		<-builds
		return nil, err
	}
	fmt.Fprintf(cfg.Progress, "moto_server (pid %d) at %s, through %s\n", s.Moto.moto.Pid(), s.Moto.Server, s.Moto.Endpoint)
	if err := s.provision(ctx); err != nil {
		ln.Close()
		<-builds
		return nil, err
	}
	if err := s.Moto.Enforce(ctx); err != nil {
		ln.Close()
		<-builds
		return nil, err
	}
	b := <-builds
	if b.err != nil {
		ln.Close()
		return nil, b.err
	}
	for _, logical := range logicals {
		if err := s.addFunction(logical, b.paths[logical]); err != nil {
			ln.Close()
			return nil, err
		}
	}
	if err := s.loadStateMachines(ctx); err != nil {
		ln.Close()
		return nil, err
	}
	if err := s.loadPatternRules(); err != nil {
		ln.Close()
		return nil, err
	}
	// The functions' Step Functions and Polly calls are answered here,
	// behind moto's endpoint (sfnapi.go).
	intercept := s.intercept
	s.Moto.intercept.Store(&intercept)
	mux := http.NewServeMux()
	api, err := s.mountAPI(mux)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.server = apigw.DefaultTimeouts.Server(api)
	go s.server.Serve(ln)
	if err := s.startFunctionURLs(); err != nil {
		return nil, err
	}
	if err := s.startEventSources(runCtx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Stack) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(s.cfg.Dir, "logs", name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	s.logFiles = append(s.logFiles, f)
	return f, nil
}

// addFunction configures one function as the template does.
func (s *Stack) addFunction(logical, bootstrap string) error {
	// What a function's process gets; the rest (its layers, tracing, log
	// format) is not modelled.
	raw := s.rawProperties(logical)
	picked := map[string]any{}
	for _, k := range []string{"Environment", "Timeout", "MemorySize", "ReservedConcurrentExecutions"} {
		if v, ok := raw[k]; ok {
			picked[k] = v
		}
	}
	v, err := s.res.resolve(picked)
	if err != nil {
		return fmt.Errorf("%s: %w", logical, err)
	}
	props, _ := v.(map[string]any)
	env := map[string]string{}
	if e, ok := props["Environment"].(map[string]any); ok {
		vars, _ := e["Variables"].(map[string]any)
		for k, v := range vars {
			env[k] = scalar(v)
		}
	}
	// What Lambda's runtime would not set but this machine needs: every
	// AWS endpoint is moto's (the SDK reads AWS_ENDPOINT_URL; the
	// template's own AWS_ENDPOINT_URL_<SERVICE> are empty, which the SDK
	// ignores), and the checksum settings the template declares for local
	// runs set as env.json sets them (moto does not take every flexible
	// checksum).
	env["AWS_ENDPOINT_URL"] = s.Moto.Endpoint
	if layers, _ := raw["Layers"].([]any); len(layers) > 0 {
		// Lambda extracts a function's layers into /opt, which this
		// machine's processes share: the paths under /opt the
		// environment names are the layer's stand-in (layers.go).
		if err := s.layerPaths(env); err != nil {
			return fmt.Errorf("%s: %w", logical, err)
		}
	}
	for _, k := range []string{"AWS_REQUEST_CHECKSUM_CALCULATION", "AWS_RESPONSE_CHECKSUM_VALIDATION"} {
		if _, declared := env[k]; declared && env[k] == "" {
			env[k] = "when_required"
		}
	}
	if v, declared := env[lambdawiring.EnvWebhookLoopbackPorts]; declared && v == "" {
		var ports []string
		for _, p := range s.cfg.WebhookLoopbackPorts {
			ports = append(ports, strconv.Itoa(int(p)))
		}
		env[lambdawiring.EnvWebhookLoopbackPorts] = strings.Join(ports, ",")
	}
	name := s.res.created[logical].ref
	root := filepath.Join(s.cfg.Dir, "functions", logical)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	link := filepath.Join(root, "bootstrap")
	os.Remove(link)
	if err := os.Symlink(bootstrap, link); err != nil {
		return err
	}
	if s.cfg.RoutingFile != nil {
		if err := os.WriteFile(filepath.Join(root, "routing.json"), s.cfg.RoutingFile, 0o644); err != nil {
			return err
		}
	}
	logPath := filepath.Join(s.cfg.Dir, "logs", logical+".log")
	logs, err := s.logFile(logical + ".log")
	if err != nil {
		return err
	}
	role := s.roles[logical]
	fn := &Function{Logical: logical, Name: name, Role: role.name, LogPath: logPath,
		Timeout: time.Duration(intOf(props["Timeout"], 3)) * time.Second, MemoryMB: intOf(props["MemorySize"], 128)}
	fn.pool = &lambdaruntime.Pool{
		Fn: lambdaruntime.Function{Name: name, Bootstrap: link, TaskRoot: root, MemoryMB: fn.MemoryMB, Timeout: fn.Timeout,
			Region: region, AccountID: accountID, AccessKeyID: role.creds.AccessKeyID, SecretAccessKey: role.creds.SecretAccessKey,
			SessionToken: role.creds.SessionToken, Env: env, Logs: &syncWriter{w: logs}},
		Reserved: intOf(props["ReservedConcurrentExecutions"], 0),
		OnStart: func(e *lambdaruntime.Environment) {
			fmt.Fprintf(s.cfg.Progress, "  cold start: %s (pid %d, role %s)\n", logical, e.PID(), role.name)
		},
	}
	s.functions[logical] = fn
	return nil
}

// Functions are the stack's functions by logical ID.
func (s *Stack) Functions() map[string]*Function { return maps.Clone(s.functions) }

// Made lists what was made in moto.
func (s *Stack) Made() []string { return slices.Clone(s.made) }

// Ref is a resource's Ref value (a table's name, a queue's URL, ...).
func (s *Stack) Ref(logical string) string { return s.res.created[logical].ref }

// AdminConfig is an SDK configuration for moto as the admin (the
// operator's own calls: making the dev account, reading the outputs).
func (s *Stack) AdminConfig() aws.Config { return s.awsConfig(s.admin) }

// Close stops the executions (new ones are refused), the event sources,
// the API, every function's processes, then the state machines' runners
// (which return once no invocation of theirs runs) and moto (by its
// process id).
func (s *Stack) Close() {
	s.closeMu.Lock()
	s.closing.Store(true)
	s.closeMu.Unlock()
	for _, sm := range s.machines {
		sm.stopAll(5 * time.Second)
	}
	if s.cancel != nil {
		s.cancel()
	}
	if s.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.server.Shutdown(ctx)
		cancel()
	}
	for _, srv := range s.urlServers {
		srv.Close() // an open stream ends with its connection
	}
	s.wg.Wait()
	for _, fn := range s.functions {
		fn.pool.Close()
	}
	for _, sm := range s.machines {
		sm.machine.Close()
	}
	s.Moto.Stop()
	for _, f := range s.logFiles {
		f.Close()
	}
}

func intOf(v any, def int) int {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return int(x)
	case string:
		if n, err := strconv.Atoi(x); err == nil {
			return n
		}
	}
	return def
}

// syncWriter serializes the writes of a function's environments to its
// one log file.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// functionOfARN finds the function an ARN (or Ref) resolves to.
func (s *Stack) functionOfARN(arn string) (*Function, error) {
	for logical, fn := range s.functions {
		p := s.res.created[logical]
		if arn == p.attrs["Arn"] || arn == p.ref {
			return fn, nil
		}
	}
	return nil, fmt.Errorf("no function of the stack has ARN %s", arn)
}

var errFunctionFailed = errors.New("the function failed")

// invokeJSON invokes fn with v as its event and decodes the answer into out.
func invokeJSON(ctx context.Context, fn *Function, v, out any) error {
	return invokeJSONTraced(ctx, fn, "", v, out)
}

// invokeJSONTraced is invokeJSON with the invocation's trace header.
func invokeJSONTraced(ctx context.Context, fn *Function, trace string, v, out any) error {
	payload, err := json.Marshal(v)
	if err != nil {
		return err
	}
	answer, err := fn.invokeTraced(ctx, payload, trace)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("%s answered %.200s: %w", fn.Logical, answer, err)
	}
	return nil
}

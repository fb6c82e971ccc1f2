package lambdaruntime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// InitTimeout is Lambda's limit on a function's init (on-demand).
const initTimeout = 10 * time.Second

// Function is a bootstrap binary and what Lambda would start it with.
type Function struct {
	// Name is AWS_LAMBDA_FUNCTION_NAME.
	Name string
	// Bootstrap is the executable's path.
	Bootstrap string
	// TaskRoot is its working directory and LAMBDA_TASK_ROOT (Lambda's
	// /var/task, where the package is unpacked); default the bootstrap's
	// directory.
	TaskRoot string
	// MemoryMB is AWS_LAMBDA_FUNCTION_MEMORY_SIZE (default 128).
	MemoryMB int
	// Timeout is the function's timeout: each event's deadline (default 3 s).
	Timeout time.Duration
	// Region is AWS_REGION and AWS_DEFAULT_REGION (default us-east-1).
	Region string
	// AccountID is the account in the function's ARN (default
	// 123456789012).
	AccountID string
	// Credentials stand in for the execution role's (AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); empty ones are "test".
	AccessKeyID, SecretAccessKey, SessionToken string
	// Env is the function's own environment (the template's Variables);
	// Lambda's reserved variables win over it.
	Env map[string]string
	// Logs, when set, gets the process's stdout and stderr.
	Logs io.Writer
}

// Environment is the process environment Lambda would give the function,
// for a Runtime API at runtimeAPI: its reserved variables (as documented
// for OS-only runtimes such as provided.al2023) over fn.Env, nothing
// inherited from this process.
func (fn Function) Environment(runtimeAPI string) []string {
	region := or(fn.Region, "us-east-1")
	mem := fn.memoryMB()
	env := maps.Clone(fn.Env)
	if env == nil {
		env = map[string]string{}
	}
	for k, v := range map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME":        fn.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(mem),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + fn.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]local",
		"AWS_REGION":                      region,
		"AWS_DEFAULT_REGION":              region,
		"AWS_ACCESS_KEY_ID":               or(fn.AccessKeyID, "test"),
		"AWS_SECRET_ACCESS_KEY":           or(fn.SecretAccessKey, "test"),
		"AWS_SESSION_TOKEN":               or(fn.SessionToken, "test"),
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                fn.taskRoot(),
		"LAMBDA_RUNTIME_DIR":              "/var/runtime",
		"LANG":                            "en_US.UTF-8",
		"TZ":                              ":UTC",
		"PATH":                            "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LD_LIBRARY_PATH":                 "/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib",
	} {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

func (fn Function) memoryMB() int {
	if fn.MemoryMB <= 0 {
		return 128
	}
	return fn.MemoryMB
}

func (fn Function) taskRoot() string {
	if fn.TaskRoot != "" {
		return fn.TaskRoot
	}
	return filepath.Dir(fn.Bootstrap)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// ColdStart is one start of a function's process up to its first answer.
type coldStart struct {
	// Init is from the process's start to its first /next: the runtime's
	// start, the package inits and the handler's construction.
	Init time.Duration
	// FirstEvent is from the first event's delivery to its answer.
	FirstEvent time.Duration
	// Total is from the process's start to the first event's answer.
	Total time.Duration
	// Invocation is the first event and its answer.
	Invocation *Invocation
	// Warm are the times from delivery to answer of the events after the
	// first, in the same process; Later are those events.
	Warm  []time.Duration
	Later []*Invocation
}

// RunColdStart starts fn's process against a Runtime API of its own, as
// Lambda starts a new execution environment, hands it event, and times it
// until the answer; then it hands it each of warm in turn (the same
// environment, now warm), and ends the process. An error is returned when
// the process exits or reports an init error first, when the init takes
// over InitTimeout or an event over fn.Timeout, or when ctx ends; a
// function error (/error) is not one: it is in the invocation's Err.
func RunColdStart(ctx context.Context, fn Function, event []byte, warm ...[]byte) (coldStart, error) {
	timeout := fn.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	srv, err := start(options{FunctionName: fn.Name, Region: fn.Region, Timeout: timeout})
	if err != nil {
		return coldStart{}, err
	}
	defer srv.Close()
	inv := srv.Enqueue(event)

	logs := &tail{max: 8 << 10}
	var out io.Writer = logs
	if fn.Logs != nil {
		out = io.MultiWriter(logs, fn.Logs)
	}
	cmd := exec.Command(fn.Bootstrap)
	cmd.Dir = fn.taskRoot()
	cmd.Env = fn.Environment(srv.Addr())
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return coldStart{}, fmt.Errorf("start %s: %w", fn.Bootstrap, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	failed := func(what string) (coldStart, error) {
		stop()
		return coldStart{}, fmt.Errorf("%s %s; its output:\n%s", fn.Name, what, logs.String())
	}

	// The init.
	initLimit := time.NewTimer(initTimeout)
	defer initLimit.Stop()
	select {
	case <-srv.InitDone():
		if fe := srv.InitError(); fe != nil {
			return failed("failed its init: " + fe.Error())
		}
	case err := <-exited:
		return coldStart{}, fmt.Errorf("%s: %w before its first event (%v); its output:\n%s", fn.Name, errProcessExited, err, logs.String())
	case <-initLimit.C:
		return failed(fmt.Sprintf("did not finish its init in %s", initTimeout))
	case <-ctx.Done():
		stop()
		return coldStart{}, ctx.Err()
	}
	// The events, one at a time.
	var later []*Invocation
	for i := 0; i <= len(warm); i++ {
		cur := inv
		if i > 0 {
			cur = srv.Enqueue(warm[i-1])
			later = append(later, cur)
		}
		eventLimit := time.NewTimer(timeout)
		select {
		case <-cur.Done():
			eventLimit.Stop()
		case err := <-exited:
			eventLimit.Stop()
			return coldStart{}, fmt.Errorf("%s: %w during event %d (%v); its output:\n%s", fn.Name, errProcessExited, i+1, err, logs.String())
		case <-eventLimit.C:
			return failed(fmt.Sprintf("did not answer event %d in %s (its timeout)", i+1, timeout))
		case <-ctx.Done():
			eventLimit.Stop()
			stop()
			return coldStart{}, ctx.Err()
		}
	}
	stop()
	cs := coldStart{
		Init:       srv.FirstNext().Sub(start),
		FirstEvent: inv.Answered.Sub(inv.Delivered),
		Total:      inv.Answered.Sub(start),
		Invocation: inv,
		Later:      later,
	}
	for _, l := range later {
		cs.Warm = append(cs.Warm, l.Answered.Sub(l.Delivered))
	}
	return cs, nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// Package testsupport starts the real protocol servers that tests run
// against. Only tests and local tools import it.
package testsupport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// ModuleRoot finds the directory holding go.mod, walking up from the
// working directory (a package's directory under go test).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// NodeTool is the path of an npm-installed tool of the project, or an error
// that names the fix.
func NodeTool(name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "tools", "node_modules", ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is not installed at %s: run `make test` (or `npm ci --prefix tools`) to install the test tools", name, bin)
	}
	return bin, nil
}

// Dynalite is a running dynalite server.
type Dynalite struct {
	Endpoint string
	cmd      *exec.Cmd
}

// StartDynalite starts dynalite on a free loopback port and waits until it
// accepts connections. DYNAMODB_ENDPOINT, when set, names a server to use
// instead.
func StartDynalite(ctx context.Context) (*Dynalite, error) {
	if ep := os.Getenv("DYNAMODB_ENDPOINT"); ep != "" {
		return &Dynalite{Endpoint: ep}, nil
	}
	bin, err := NodeTool("dynalite")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdout, cmd.Stderr = nil, os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start dynalite (%s): %w", bin, err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		d := &Dynalite{Endpoint: "http://" + addr, cmd: cmd}
		if lastErr = waitListening(ctx, addr, 15*time.Second); lastErr == nil {
			return d, nil
		}
		d.Stop()
	}
	return nil, fmt.Errorf("dynalite did not start on a loopback port: %w", lastErr)
}

// Stop ends the server and its child processes.
func (d *Dynalite) Stop() {
	if d == nil || d.cmd == nil || d.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Client is a DynamoDB client for the server, with static test credentials.
func (d *Dynalite) Client() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(d.Endpoint),
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listening on %s after %s: %w", addr, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

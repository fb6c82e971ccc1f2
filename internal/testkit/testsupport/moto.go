package testsupport

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// MotoFix is the one line that says how to get moto's server.
const MotoFix = "moto's server is missing: pip install 'moto[server]==5.2.1' (python3 -c 'import moto' must work)"

// motoLauncher is scripts/moto_server.py, which runs moto's server with a
// cancelled transaction rolled back item by item (see the script), or an
// error that names the fix.
func motoLauncher() (string, error) {
	if err := exec.Command("python3", "-c", "import moto").Run(); err != nil {
		return "", fmt.Errorf("%s (%w)", MotoFix, err)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "scripts", "moto_server.py"), nil
}

// MotoServer is a moto server this process started (StartMoto).
type MotoServer struct {
	// URL is the server's own URL on loopback.
	URL string
	cmd *exec.Cmd
}

// StartMoto starts moto's server (motoLauncher) on a free loopback port,
// with env added to this process's environment and its output to log
// (nil: discarded), and waits until it answers, for up to limit. A port
// taken meanwhile by another process is tried again on another, twice.
func StartMoto(ctx context.Context, env []string, log io.Writer, limit time.Duration) (*MotoServer, error) {
	launcher, err := motoLauncher()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command("python3", launcher, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
		cmd.Env = append(os.Environ(), env...)
		// Its own process group, so that Stop ends it and nothing else.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start moto's server (%s): %w", launcher, err)
		}
		m := &MotoServer{URL: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd}
		if lastErr = waitAnswering(ctx, m.URL, limit); lastErr == nil {
			return m, nil
		}
		m.Stop()
	}
	return nil, fmt.Errorf("moto_server did not start on a loopback port: %w", lastErr)
}

// Pid is the server's process id.
func (m *MotoServer) Pid() int { return m.cmd.Process.Pid }

// Stop ends the server by its process group: SIGTERM, then SIGKILL after
// 5 s. A nil server is left alone.
func (m *MotoServer) Stop() {
	if m == nil || m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitAnswering waits until moto answers at /moto-api/.
func waitAnswering(ctx context.Context, endpoint string, limit time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(limit)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/moto-api/", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer after %s: %w", endpoint, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

package lambdastack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"

	"github.com/mediagen-dev/mediagen"
)

// sourceHash is a digest of what a bootstrap is built from: go.mod, go.sum,
// the Makefile and every non-test Go file under functions/ and internal/
// (but the local-only packages),
// with this machine's OS and architecture. A cached build is reused while
// it is the same.
func sourceHash(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s\n", goruntime.GOOS, goruntime.GOARCH)
	for _, f := range []string{"go.mod", "go.sum", "Makefile"} {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(raw))
		h.Write(raw)
	}
	for _, dir := range []string{"functions", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() {
				// Never linked into a bootstrap (scripts/build-lambdas.sh
				// refuses one that links them): a change there rebuilds
				// nothing.
				if rel == filepath.Join("internal", "local") || rel == filepath.Join("internal", "testkit") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", rel, len(raw))
			h.Write(raw)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// defaultCacheDir is where built bootstraps are kept between runs.
func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "mediagen", "lambdas")
	}
	return filepath.Join(os.TempDir(), "mediagen-lambdas")
}

// buildBootstraps builds each function's bootstrap with the Makefile's own
// target (build-<LogicalId>, its flags and tags) for this machine's OS and
// architecture, into cacheDir/<source hash>/<folder>/, two at a time;
// a bootstrap already there from the same sources is kept. It returns the
// bootstrap's path by logical ID.
func buildBootstraps(ctx context.Context, root, cacheDir string, logicals []string, progress io.Writer) (map[string]string, error) {
	key, err := sourceHash(root)
	if err != nil {
		return nil, fmt.Errorf("hash the sources: %w", err)
	}
	dir := filepath.Join(cacheDir, key)
	out := map[string]string{}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, 2)
	)
	for _, logical := range logicals {
		folder := mediagen.FunctionFolder(logical)
		bootstrap := filepath.Join(dir, folder, "bootstrap")
		out[logical] = bootstrap
		if _, err := os.Stat(bootstrap); err == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			tmp := filepath.Join(dir, fmt.Sprintf("%s.tmp%d", folder, os.Getpid()))
			os.RemoveAll(tmp)
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			cmd := exec.CommandContext(ctx, "make", "-s", "-C", root, "build-"+logical, "ARTIFACTS_DIR="+tmp, "ROUTING_OPTIONAL=1",
				fmt.Sprintf("LAMBDA_GOFLAGS=GOOS=%s GOARCH=%s CGO_ENABLED=0", goruntime.GOOS, goruntime.GOARCH))
			raw, err := cmd.CombinedOutput()
			if err == nil {
				// Only the binary: the routing file is the run's own.
				os.Remove(filepath.Join(tmp, "routing.json"))
				if err = os.Rename(tmp, filepath.Join(dir, folder)); err != nil {
					// Another run built it meanwhile: keep that one.
					if _, statErr := os.Stat(bootstrap); statErr == nil {
						err = nil
					}
					os.RemoveAll(tmp)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("build %s (make build-%s): %w\n%s", logical, logical, err, raw)
			}
			if err == nil && progress != nil {
				fmt.Fprintf(progress, "  built %s\n", folder)
			}
		}()
	}
	wg.Wait()
	return out, firstErr
}

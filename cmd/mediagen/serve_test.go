package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// TestServeRefusesAddressesBeyondThisMachine: without --allow-remote,
// serve takes loopback addresses only, for the API, the file origin and
// the S3 API alike, and starts nothing.
func TestServeRefusesAddressesBeyondThisMachine(t *testing.T) {
	for _, args := range [][]string{
		{"--addr", "0.0.0.0:0"},
		{"--addr", ":0"},
		{"--addr", "[::]:0"},
		{"--addr", "192.168.1.10:0"},
		{"--addr", "mediagen.example:0"},
		{"--addr", "127.0.0.1:0", "--files-addr", "0.0.0.0:0"},
		{"--addr", "127.0.0.1:0", "--s3-addr", "0.0.0.0:0"},
		{"--addr", "127.0.0.1:0", "--sim-addr", "0.0.0.0:0"},
		{"--addr", "127.0.0.1:0", "--sim-files-addr", "0.0.0.0:0"},
	} {
		data := filepath.Join(t.TempDir(), "data")
		code, out, errOut := mediagen(t, append([]string{"serve", "--data", data}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "--allow-remote") || !strings.Contains(errOut, args[len(args)-2]) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 2 naming the flag and --allow-remote", args, code, errOut)
		}
		if out != "" {
			t.Errorf("serve %v printed %q", args, out)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("serve %v made its data directory: it started", args)
		}
	}
}

// TestServeRefusesANegativeAuthCacheTTL: --auth-cache-ttl is 0 (no cache)
// or more; a negative one is a usage error and starts nothing.
func TestServeRefusesANegativeAuthCacheTTL(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	code, out, errOut := mediagen(t, "serve", "--data", data, "--addr", "127.0.0.1:0", "--auth-cache-ttl", "-1s")
	if code != exitUsage || !strings.Contains(errOut, "--auth-cache-ttl") || out != "" {
		t.Errorf("serve --auth-cache-ttl -1s: exit %d, stdout %q, stderr %q; want exit 2 naming the flag", code, out, errOut)
	}
	if _, err := os.Stat(data); err == nil {
		t.Errorf("serve --auth-cache-ttl -1s made its data directory: it started")
	}
}

// TestServeRefusesAWebhookReceiverBeyondThisMachine: --webhook-allow takes
// HOST:PORT of this machine only; anything else is a usage error naming
// the value, and starts nothing.
func TestServeRefusesAWebhookReceiverBeyondThisMachine(t *testing.T) {
	for _, value := range []string{"192.168.1.10:9000", "0.0.0.0:9000", "hooks.example:443", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000"} {
		data := filepath.Join(t.TempDir(), "data")
		code, out, errOut := mediagen(t, "serve", "--data", data, "--addr", "127.0.0.1:0", "--webhook-allow", "127.0.0.1:9000", "--webhook-allow", value)
		if code != exitUsage || !strings.Contains(errOut, "webhook-allow") || !strings.Contains(errOut, value) || out != "" {
			t.Errorf("serve --webhook-allow %s: exit %d, stdout %q, stderr %q; want exit 2 naming the value", value, code, out, errOut)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("serve --webhook-allow %s made its data directory: it started", value)
		}
	}
}

// TestServeAllowRemoteWarnsWhatBecomesReachable: --allow-remote starts the
// runtime and says on stderr which addresses then serve what. (The test
// listens on loopback: what it checks is the warning.)
func TestServeAllowRemoteWarnsWhatBecomesReachable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer // written by serve, read by the test
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--allow-remote", "--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--data", t.TempDir(), "--log-level", "error"}, &stdout, &stderr)
	}()
	waitfor.Condition(t, time.Minute, "serve to print its API key", func() bool { return strings.Contains(stdout.String(), "API key:") })
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("serve --allow-remote exited %d: %s", code, stderr.String())
	}
	warning := stderr.String()
	for _, want := range []string{"WARNING: --allow-remote", "the API", "the playground", "upstream simulator", "every output", "S3 API", "no TLS"} {
		if !strings.Contains(warning, want) {
			t.Errorf("the warning does not say %q: %s", want, warning)
		}
	}
	if !strings.Contains(stdout.String(), "outputs:") {
		t.Errorf("the banner does not name the outputs' origin: %s", stdout.String())
	}
}

// TestServeRefusesABadRoutingFileWithOneLine: serve checks the routing file
// before it starts anything, and a bad one ends it with a non-zero exit and
// one line naming the problem.
func TestServeRefusesABadRoutingFileWithOneLine(t *testing.T) {
	valid := func() map[string]any {
		raw, _ := json.Marshal(routing.Single("rep", routing.ProtocolReplicate, "https://api.replicate.com", []string{"replicate.delivery"}))
		var m map[string]any
		json.Unmarshal(raw, &m)
		return m
	}
	tests := []struct {
		name string
		edit func(m map[string]any)
		says string
	}{
		{"an unknown upstream", func(m map[string]any) {
			m["variants"].(map[string]any)["provider-a/zeta"] = []any{map[string]any{"upstream": "elsewhere", "model": "a/b"}}
		}, `unknown upstream "elsewhere"`},
		{"a missing variant", func(m map[string]any) { delete(m["variants"].(map[string]any), "provider-d/video-01") }, "variant provider-d/video-01 has no route"},
		{"a bad protocol", func(m map[string]any) {
			m["upstreams"].(map[string]any)["rep"].(map[string]any)["protocol"] = "soap"
		}, `protocol "soap" is not "replicate" or "fal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := valid()
			tt.edit(m)
			raw, _ := json.Marshal(m)
			path := filepath.Join(t.TempDir(), "routing.json")
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"serve", "--routing", path, "--addr", "127.0.0.1:0", "--data", t.TempDir()}, &stdout, &stderr)
			msg := stderr.String()
			if code == 0 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.says) || !strings.Contains(msg, path) {
				t.Errorf("serve exited %d with %q, want non-zero and one line naming %s and saying %q", code, msg, path, tt.says)
			}
		})
	}
}

// TestServeOnDynamoDBCompletesEveryKindOfWork runs `mediagen tables create`
// and `mediagen serve --dynamodb --endpoint-url … --table-prefix …` against
// moto's server, as docs/cli.md shows, and takes an image, a video and a
// long-form video to completed through the HTTP API; the records are then
// DynamoDB items of those tables.
func TestServeOnDynamoDBCompletesEveryKindOfWork(t *testing.T) {
	ctx := context.Background()
	server, err := testsupport.StartDynamoDB(ctx)
	if err != nil {
		t.Fatalf("serve --dynamodb needs moto's server: %v", err)
	}
	t.Cleanup(server.Stop)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	prefix := fmt.Sprintf("serve%d", time.Now().UnixNano())
	flags := []string{"--dynamodb", "--endpoint-url", server.Endpoint, "--table-prefix", prefix}

	// Without its tables, serve stops at once and says what to run.
	if code, _, errOut := mediagen(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, flags...)...); code == 0 || !strings.Contains(errOut, "mediagen tables create") {
		t.Errorf("serve without tables: exit %d, %q; want a failure naming `mediagen tables create`", code, errOut)
	}
	if code, _, errOut := mediagen(t, append([]string{"tables", "create"}, flags...)...); code != 0 {
		t.Fatalf("tables create: %s", errOut)
	}

	serveCtx, stop := context.WithCancel(ctx)
	var stdout, stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(serveCtx, append([]string{"serve", "--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--data", t.TempDir(),
			"--sim-latency", "100ms", "--poll-interval", "200ms"}, flags...), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, stderr.String())
		}
	})
	var base, key string
	if !waitfor.Condition(t, time.Minute, "serve to print its base URL and key", func() bool {
		if m := regexp.MustCompile(`base URL: (\S+)`).FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
		if m := regexp.MustCompile(`API key:  (\S+)`).FindStringSubmatch(stdout.String()); m != nil {
			key = m[1]
		}
		return base != "" && key != ""
	}) {
		t.Fatalf("serve printed no base URL and key: %q %q", stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), prefix+"-accounts") {
		t.Errorf("serve does not say it keeps the records in the %s tables: %q", prefix, stdout.String())
	}

	post := func(path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		return call(t, req, http.StatusOK)
	}
	// until asks again until done, for at most 3 minutes: serve runs on
	// its own real time.
	until := func(what string, done func() (bool, any)) {
		t.Helper()
		if last, ok := waitfor.Value(t, 3*time.Minute, what, func() (any, bool) {
			ok, last := done()
			return last, ok
		}); !ok {
			t.Fatalf("%s: still %v", what, last)
		}
	}
	wait := func(path string) (v map[string]any) {
		t.Helper()
		until(path+" final", func() (bool, any) {
			req, _ := http.NewRequest(http.MethodGet, base+path, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			v = call(t, req, http.StatusOK)
			return v["status"] != "processing", v
		})
		return v
	}

	image := post("/api/generations/generate", `{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a lighthouse at dawn"},"image_count":1}`)
	video := post("/api/generations/generate", `{"model":"provider-b","model_version":"beta-2","input":{"prompt":"a paper boat","seconds":"4","aspect_ratio":"landscape"}}`)
	story := post("/api/long-story/videos", `{"prompt":"A day at the seaside","model":"beta-2","language_code":"en","enable_narration":true,
		"scenes":[{"scene_number":1,"prompt":"waves roll onto an empty beach"},{"scene_number":2,"prompt":"gulls over the pier"}]}`)
	for _, w := range []struct{ path, suffix string }{
		{"/api/generations/status/" + fmt.Sprint(image["uuid"]), ".png"},
		{"/api/generations/status/" + fmt.Sprint(video["uuid"]), ".mp4"},
		{"/api/long-story/videos/" + fmt.Sprint(story["video_id"]), ".mp4"},
	} {
		v := wait(w.path)
		out := fmt.Sprint(v["output"], v["final_video_url"])
		if v["status"] != "completed" || !strings.Contains(out, w.suffix) {
			t.Errorf("%s: %v, want completed with a %s output", w.path, v, w.suffix)
		}
	}

	// The records are the DynamoDB adapter's items: the generations and the
	// video in their tables, the three holds settled in the ledger.
	client, tables := server.Client(), dynamostore.TablesWithPrefix(prefix)
	for _, c := range []struct {
		table, key, id string
	}{{tables.Generations, "uuid", fmt.Sprint(image["uuid"])}, {tables.Generations, "uuid", fmt.Sprint(video["uuid"])}, {tables.LongVideos, "id", fmt.Sprint(story["video_id"])}} {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table),
			Key: map[string]types.AttributeValue{c.key: &types.AttributeValueMemberS{Value: c.id}}})
		if err != nil || out.Item == nil {
			t.Errorf("no item %s in %s: %v", c.id, c.table, err)
		} else if s, _ := out.Item["status"].(*types.AttributeValueMemberS); s == nil || s.Value != "completed" {
			t.Errorf("item %s in %s: status %v", c.id, c.table, out.Item["status"])
		}
	}
	// A record turns final just before its hold is settled (two writes,
	// the second retried until it lands): the test waits for the second,
	// then checks that the journal explains every credit.
	until("the holds settled", func() (bool, any) {
		acct := getAccount(t, base, key)
		return acct["held"] == "0.00", acct
	})
	code, out, errOut := mediagen(t, append([]string{"ledger", "verify"}, flags...)...)
	if v := decode[ledger.Verified](t, out); code != 0 || v.Entries == 0 || len(v.Discrepancies) != 0 {
		t.Errorf("ledger verify after the work: exit %d, %+v %s", code, v, errOut)
	}
}

func getAccount(t *testing.T, base, key string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/api/account", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	return call(t, req, http.StatusOK)
}

func call(t *testing.T, req *http.Request, want int) map[string]any {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != want {
		t.Fatalf("%s %s: HTTP %d %v (%v)", req.Method, req.URL.Path, resp.StatusCode, v, err)
	}
	return v
}

// TestServePrintsTheSimulatorsFilesOriginAndCA: serve prints where the
// built-in simulator serves its outputs (https, on the port
// --sim-files-addr fixes) and the path of the CA that signs it, which a
// client trusts to fetch them; a restart on the same data directory serves
// the same origin with the same CA, so that a simulator used as a remote
// provider, and a client trusting it, keep working.
func TestServePrintsTheSimulatorsFilesOriginAndCA(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("127.0.0.2 cannot be listened on: %v", err)
	}
	filesAddr := ln.Addr().String()
	ln.Close()
	data := t.TempDir()
	serveOnce := func() (filesURL, caFile string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr lockedBuffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--sim-files-addr", filesAddr,
				"--data", data, "--log-level", "error"}, &stdout, &stderr)
		}()
		defer func() {
			cancel()
			if code := <-done; code != exitOK {
				t.Fatalf("serve exited %d: %s", code, stderr.String())
			}
		}()
		if !waitfor.Condition(t, time.Minute, "serve to print its API key", func() bool { return strings.Contains(stdout.String(), "API key:") }) {
			t.Fatalf("serve printed no API key: %q %q", stdout.String(), stderr.String())
		}
		if m := regexp.MustCompile(`simulator files: (\S+)`).FindStringSubmatch(stdout.String()); m != nil {
			filesURL = m[1]
		}
		if m := regexp.MustCompile(`simulator CA: (\S+)`).FindStringSubmatch(stdout.String()); m != nil {
			caFile = m[1]
		}
		if filesURL != "https://"+filesAddr {
			t.Errorf("serve printed the simulator's files at %q, want https://%s: %s", filesURL, filesAddr, stdout.String())
		}
		if want := filepath.Join(data, "simulator", "ca.pem"); caFile != want {
			t.Errorf("serve printed the simulator's CA at %q, want %s", caFile, want)
		}
		// A client trusting the printed CA reaches the origin over https
		// (no such file: 404, after a handshake that verified).
		pem, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			t.Fatalf("%s holds no certificate", caFile)
		}
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := client.Get(filesURL + "/files/nosuchprediction/0.png")
		if err != nil {
			t.Fatalf("GET from the files origin trusting the printed CA: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET of no file: HTTP %d, want 404", resp.StatusCode)
		}
		return filesURL, string(pem)
	}
	url1, ca1 := serveOnce()
	url2, ca2 := serveOnce()
	if url1 != url2 || ca1 != ca2 {
		t.Errorf("after a restart the files are at %s (was %s), CA changed: %t", url2, url1, ca1 != ca2)
	}
}

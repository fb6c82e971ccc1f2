// Package testsupport starts the real protocol servers that tests run
// against. Only tests and local tools import it.
package testsupport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
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

// EnvDynamoDBEndpoint names a DynamoDB server the tests use instead of
// starting their own (scripts/test.sh starts one moto server for the run).
const envDynamoDBEndpoint = "DYNAMODB_ENDPOINT"

// DynamoDB is a DynamoDB protocol server: moto's server (moto_server),
// which has transactions, cancellation reasons, GSIs, LSIs, the TTL API
// and the 400 KB item limit, behind a loopback ConflictProxy of this
// process, which gives it DynamoDB's per-item atomicity and answers
// overlapping transactions with TransactionConflict as DynamoDB does (see
// ConflictProxy). Tests in other processes use tables of their own
// (NewTables), which a cancelled transaction's restored copies never
// include.
type DynamoDB struct {
	// Endpoint is the proxy's URL, for clients.
	Endpoint string
	// Server is moto's own URL.
	Server string
	// Proxy counts the conflicts it answered.
	Proxy *ConflictProxy
	moto  *MotoServer // nil: a server this process did not start
	proxy *http.Server
}

// StartDynamoDB starts moto's server (motoLauncher) on a free loopback port, waits until it
// answers and puts the proxy in front of it; DYNAMODB_ENDPOINT, when set,
// names a running server to proxy instead (then Stop leaves it running).
func StartDynamoDB(ctx context.Context) (*DynamoDB, error) {
	if ep := os.Getenv(envDynamoDBEndpoint); ep != "" {
		d := &DynamoDB{Server: ep}
		return d, d.startProxy()
	}
	server, err := StartMoto(ctx, nil, nil, 30*time.Second)
	if err != nil {
		return nil, err
	}
	d := &DynamoDB{Server: server.URL, moto: server}
	if err := d.startProxy(); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// startProxy serves the conflict-faithful proxy on a loopback port.
func (d *DynamoDB) startProxy() error {
	cp, err := newConflictProxy(d.Server)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the DynamoDB proxy: %w", err)
	}
	d.Proxy = cp
	d.proxy = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: cp}
	go d.proxy.Serve(ln)
	d.Endpoint = "http://" + ln.Addr().String()
	return nil
}

// Stop closes the proxy and ends the server this process started, by its
// process id.
func (d *DynamoDB) Stop() {
	if d == nil {
		return
	}
	if d.proxy != nil {
		d.proxy.Close()
	}
	d.moto.Stop()
}

// Client is a DynamoDB client for the server, with static test credentials.
func (d *DynamoDB) Client() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(d.Endpoint),
	})
}

var tableSets atomic.Int64

// NewTables creates a fresh set of the store's tables, named with a prefix
// of its own (name, the process and a counter), so that tests sharing one
// server never see each other's items.
func (d *DynamoDB) NewTables(ctx context.Context, name string) (dynamostore.Tables, error) {
	prefix := fmt.Sprintf("%s%d-%d-%d", name, os.Getpid(), time.Now().UnixNano()%1e9, tableSets.Add(1))
	tables := dynamostore.TablesWithPrefix(prefix)
	if err := dynamostore.CreateTables(ctx, d.Client(), tables); err != nil {
		return dynamostore.Tables{}, fmt.Errorf("create tables %s-* on %s: %w", prefix, d.Endpoint, err)
	}
	return tables, nil
}

// NewStore is a store on a fresh set of tables.
func (d *DynamoDB) NewStore(ctx context.Context, name string) (*dynamostore.Store, error) {
	tables, err := d.NewTables(ctx, name)
	if err != nil {
		return nil, err
	}
	return dynamostore.New(d.Client(), tables, dynamostore.WithLedgerBudget(StandInLedgerBudget)), nil
}

// StandInLedgerBudget is the ledger's retry budget on the stand-in: it
// answers one request at a time, so each of N concurrent clients waits for
// N requests of moto (milliseconds each, seconds under -race with 8 busy
// processes on 2 cores: make test-under-load) where DynamoDB answers them
// side by side; the default budget (dynamostore.LedgerBudget) is sized for
// DynamoDB. It is a hang detector here, not a speed target: 3 minutes let
// 200 concurrent holds of one account fail "busy" under load.
const StandInLedgerBudget = 20 * time.Minute

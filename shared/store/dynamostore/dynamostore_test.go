package dynamostore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/shared/store/dynamostore"
	"github.com/mediagen-dev/mediagen/shared/store/storetest"
	"github.com/mediagen-dev/mediagen/shared/testsupport"
)

var server *testsupport.Dynalite

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var err error
	server, err = testsupport.StartDynalite(ctx)
	cancel()
	if err != nil {
		// Never skip: the DynamoDB adapter must be proved in CI.
		fmt.Fprintf(os.Stderr, "FAIL: the DynamoDB conformance suite needs dynalite: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

// newStore creates a fresh set of tables on the server.
func newStore(t *testing.T) *dynamostore.Store {
	t.Helper()
	client := server.Client()
	tables := dynamostore.TablesWithPrefix(fmt.Sprintf("t%d", time.Now().UnixNano()))
	if err := dynamostore.CreateTables(context.Background(), client, tables); err != nil {
		t.Fatalf("create tables on %s: %v", server.Endpoint, err)
	}
	return dynamostore.New(client, tables)
}

func TestConformance(t *testing.T) {
	t.Logf("adapter: dynamodb (dynalite at %s)", server.Endpoint)
	storetest.Run(t, newStore(t))
}

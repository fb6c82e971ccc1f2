package sqlitestore_test

import (
	"context"
	"os"
	"testing"

	"github.com/mediagen-dev/mediagen/shared/store/sqlitestore"
	"github.com/mediagen-dev/mediagen/shared/store/storetest"
)

func TestConformance(t *testing.T) {
	s, err := sqlitestore.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	t.Log("adapter: sqlite (embedded file store)")
	storetest.Run(t, s)
}

// A data directory whose name holds URI syntax opens its own database.
func TestDataDirsWithURISyntaxAreKeptApart(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for _, dir := range []string{"runs#1", "runs#2", "runs?x=1", "runs%23"} {
		s, err := sqlitestore.Open(ctx, root+"/"+dir)
		if err != nil {
			t.Fatalf("open %s: %v", dir, err)
		}
		if _, err := os.Stat(root + "/" + dir + "/" + sqlitestore.FileName); err != nil {
			t.Errorf("the database of %s is not in it: %v", dir, err)
		}
		s.Close()
	}
	if _, err := os.Stat(root + "/runs"); err == nil {
		t.Error("a directory named runs#1 opened a database under runs")
	}
}

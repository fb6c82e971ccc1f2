package sqlitestore_test

import (
	"context"
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

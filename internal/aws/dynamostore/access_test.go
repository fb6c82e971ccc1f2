package dynamostore_test

import (
	"context"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
)

// recorder is the store's DynamoDB client that notes each request under
// the method of Store that made it (the outermost one on the stack).
type recorder struct {
	dynamostore.API
	tables map[string]string // table name → Tables field

	mu   sync.Mutex
	seen map[string]map[dynamostore.Access]bool
}

func newRecorder(api dynamostore.API, t dynamostore.Tables) *recorder {
	r := &recorder{API: api, tables: map[string]string{}, seen: map[string]map[dynamostore.Access]bool{}}
	v := reflect.ValueOf(t)
	for i := 0; i < v.NumField(); i++ {
		r.tables[v.Field(i).String()] = v.Type().Field(i).Name
	}
	return r
}

var storeMethod = regexp.MustCompile(`/dynamostore\.\(\*Store\)\.([A-Z]\w*)`)

func (r *recorder) note(action string, table *string, index *string) {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	method := ""
	for {
		f, more := frames.Next()
		if m := storeMethod.FindStringSubmatch(f.Function); m != nil {
			method = m[1] // keep going: the outermost one counts
		}
		if !more {
			break
		}
	}
	a := dynamostore.Access{Action: action, Table: r.tables[aws.ToString(table)], Index: aws.ToString(index)}
	if a.Table == "" {
		a.Table = "unknown table " + aws.ToString(table)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[method] == nil {
		r.seen[method] = map[dynamostore.Access]bool{}
	}
	r.seen[method][a] = true
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.note("GetItem", in.TableName, nil)
	return r.API.GetItem(ctx, in, opts...)
}

func (r *recorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for table := range in.RequestItems {
		r.note("BatchGetItem", aws.String(table), nil)
	}
	return r.API.BatchGetItem(ctx, in, opts...)
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.note("PutItem", in.TableName, nil)
	return r.API.PutItem(ctx, in, opts...)
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.note("UpdateItem", in.TableName, nil)
	return r.API.UpdateItem(ctx, in, opts...)
}

func (r *recorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.note("DeleteItem", in.TableName, nil)
	return r.API.DeleteItem(ctx, in, opts...)
}

func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.note("Query", in.TableName, in.IndexName)
	return r.API.Query(ctx, in, opts...)
}

func (r *recorder) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	r.note("Scan", in.TableName, in.IndexName)
	return r.API.Scan(ctx, in, opts...)
}

// TransactWriteItems is noted item by item, by the action IAM checks for it.
func (r *recorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			r.note("PutItem", it.Put.TableName, nil)
		case it.Update != nil:
			r.note("UpdateItem", it.Update.TableName, nil)
		case it.Delete != nil:
			r.note("DeleteItem", it.Delete.TableName, nil)
		case it.ConditionCheck != nil:
			r.note("ConditionCheckItem", it.ConditionCheck.TableName, nil)
		}
	}
	return r.API.TransactWriteItems(ctx, in, opts...)
}

// checkAccesses compares what the methods did with dynamostore.Accesses.
func (r *recorder) checkAccesses(t *testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	storeType := reflect.TypeOf(&dynamostore.Store{})
	for i := 0; i < storeType.NumMethod(); i++ {
		name := storeType.Method(i).Name
		declared, ok := dynamostore.Accesses[name]
		if !ok {
			t.Errorf("Store.%s is not in dynamostore.Accesses", name)
			continue
		}
		want := map[dynamostore.Access]bool{}
		for _, a := range declared {
			want[a] = true
		}
		got := r.seen[name]
		if len(got) == 0 {
			t.Errorf("Store.%s made no request under the conformance suite: it is not tested", name)
			continue
		}
		for a := range got {
			if !want[a] {
				t.Errorf("Store.%s made %+v, which dynamostore.Accesses does not declare", name, a)
			}
		}
		for a := range want {
			if !got[a] {
				t.Errorf("dynamostore.Accesses declares %+v for Store.%s, which the conformance suite never saw it make", a, name)
			}
		}
	}
	for name := range dynamostore.Accesses {
		if _, ok := storeType.MethodByName(name); !ok {
			t.Errorf("dynamostore.Accesses declares %s, which Store does not have", name)
		}
	}
	if others := r.seen[""]; len(others) > 0 {
		var list []string
		for a := range others {
			list = append(list, a.Action+" "+a.Table)
		}
		sort.Strings(list)
		t.Errorf("requests made outside any Store method: %v", list)
	}
}

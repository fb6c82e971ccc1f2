package testsupport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ConflictProxy stands in front of moto's server with DynamoDB's semantics
// under concurrency, which moto lacks:
//
//   - Each item's conditional writes are atomic. moto runs every request
//     on a thread of its own with no lock, so two conditional writes of one
//     item can both pass their condition; and a cancelled transaction puts
//     back a deep copy of its tables taken before it began, undoing what
//     other requests wrote meanwhile (moto's transact_write_items). Per-item
//     locks cannot fix the second, so the proxy passes moto one request at
//     a time: a serial order, which DynamoDB's serializable transactions
//     and atomic single-item writes allow.
//   - Overlapping transactions conflict as DynamoDB's transactions guide
//     says, instead of queueing: a TransactWriteItems holds its items from
//     its turn at moto until it is answered, and its answer waits the
//     commit time first (CommitTime: the part of a real transaction's 10-30
//     ms that moto's answer does not take; waiting for its turn here is an
//     artifact of the serial order and holds nothing). As on DynamoDB, the
//     window closes before the client hears back, so a client's next
//     request never meets its own last transaction, and requests that
//     overlap in time do meet. A TransactWriteItems touching an item that
//     another in-flight transaction holds is cancelled with
//     TransactionCanceledException, reason TransactionConflict for that
//     item and None for the others; a PutItem, UpdateItem or DeleteItem of
//     such an item gets TransactionConflictException. Neither reaches moto,
//     so neither changes anything. Reads are never refused (DynamoDB's
//     GetItem and Query read the last committed value).
//
// Run moto through scripts/moto_server.py (StartDynamoDB and
// scripts/test.sh do): it rolls a cancelled transaction back item by item
// instead of copying whole tables.
//
// Conflicts counts what it refused, so a test can show that its load met
// real conflicts.
type ConflictProxy struct {
	target *url.URL
	rp     *httputil.ReverseProxy
	client *http.Client

	serial sync.Mutex // one request at a time at moto

	mu   sync.Mutex
	held map[string]bool // items of in-flight transactions
	// byTable counts the conflicts met on each table's items.
	byTable map[string]int64
	// byOp counts the requests of each operation.
	byOp map[string]int64
	keys map[string][]string // table → its key attribute names

	// commit is how long a transaction keeps its items after moto applied
	// it, before its answer (SetCommitTime; CommitTime).
	commit atomic.Int64
	// committing, when set, runs in that window (a test holds it open).
	committing func()

	txConflicts     atomic.Int64
	singleConflicts atomic.Int64
	transactions    atomic.Int64
}

// NewConflictProxy is a proxy to the DynamoDB server at target (moto's URL).
func newConflictProxy(target string) (*ConflictProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("DynamoDB endpoint %q: %w", target, err)
	}
	p := &ConflictProxy{target: u, rp: httputil.NewSingleHostReverseProxy(u),
		client: &http.Client{Timeout: 30 * time.Second},
		held:   map[string]bool{}, keys: map[string][]string{}, byTable: map[string]int64{}, byOp: map[string]int64{}}
	p.SetCommitTime(commitTime)
	return p, nil
}

// SetCommitTime sets how long a transaction keeps its items after moto
// applied it, before it is answered.
func (p *ConflictProxy) SetCommitTime(d time.Duration) { p.commit.Store(int64(d)) }

// CommitTime makes a transaction's window on its items about a real one's:
// moto's few milliseconds plus this.
const commitTime = 5 * time.Millisecond

// Conflicts are the transactions cancelled for a conflict and the single
// writes refused for one, so far.
func (p *ConflictProxy) Conflicts() (transactions, singleWrites int64) {
	return p.txConflicts.Load(), p.singleConflicts.Load()
}

// ConflictsByTable counts the items of cancelled transactions that were in
// conflict, by table name.
func (p *ConflictProxy) ConflictsByTable() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.byTable)
}

// Requests counts the requests the proxy received, by operation.
func (p *ConflictProxy) Requests() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.byOp)
}

// Transactions is how many TransactWriteItems the proxy received.
func (p *ConflictProxy) Transactions() int64 { return p.transactions.Load() }

const dynamoTargetPrefix = "DynamoDB_20120810."

func (p *ConflictProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), dynamoTargetPrefix)
	p.mu.Lock()
	p.byOp[op]++
	p.mu.Unlock()
	var items []string
	switch op {
	case "TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "CreateTable":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if op == "CreateTable" {
			p.learnKeys(body)
			break
		}
		if items, err = p.itemsOf(op, body); err != nil {
			// Malformed for us: let moto answer it as DynamoDB would.
			items = nil
		}
	}
	if op == "TransactWriteItems" {
		p.serveTransaction(w, r, items)
		return
	}
	p.serial.Lock()
	defer p.serial.Unlock()
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		if len(items) == 1 && p.isHeld(items[0]) {
			p.singleConflicts.Add(1)
			writeDynamoError(w, "TransactionConflictException", "Transaction is ongoing for the item")
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}

// serveTransaction passes a TransactWriteItems to moto in its turn unless
// another in-flight transaction holds one of its items, and answers it once
// its commit time passed and its items are free again.
func (p *ConflictProxy) serveTransaction(w http.ResponseWriter, r *http.Request, items []string) {
	p.transactions.Add(1)
	p.serial.Lock()
	if conflicts := p.take(items); conflicts != nil {
		p.serial.Unlock()
		p.txConflicts.Add(1)
		writeCanceled(w, conflicts)
		return
	}
	answer := httptest.NewRecorder()
	p.rp.ServeHTTP(answer, r)
	p.serial.Unlock()

	p.mu.Lock()
	committing := p.committing
	p.mu.Unlock()
	if committing != nil {
		committing()
	}
	// The modelled service time of DynamoDB's commit, not a wait for an
	// outcome: the proxy answers after it whatever happens meanwhile.
	commit := time.NewTimer(time.Duration(p.commit.Load()))
	select {
	case <-commit.C:
	case <-r.Context().Done():
		commit.Stop()
	}
	p.release(items)
	maps.Copy(w.Header(), answer.Header())
	w.WriteHeader(answer.Code)
	w.Write(answer.Body.Bytes())
}

// setCommitting runs f in each transaction's window from now on (nil: none).
func (p *ConflictProxy) setCommitting(f func()) {
	p.mu.Lock()
	p.committing = f
	p.mu.Unlock()
}

// take marks the items held by one transaction, or, when another in-flight
// transaction holds any of them, marks nothing and says which conflict.
func (p *ConflictProxy) take(items []string) []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var conflicts []bool
	for i, it := range items {
		if p.held[it] {
			if conflicts == nil {
				conflicts = make([]bool, len(items))
			}
			conflicts[i] = true
			table, _, _ := strings.Cut(it, "\x00")
			p.byTable[table]++
		}
	}
	if conflicts != nil {
		return conflicts
	}
	for _, it := range items {
		p.held[it] = true
	}
	return nil
}

func (p *ConflictProxy) release(items []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range items {
		delete(p.held, it)
	}
}

func (p *ConflictProxy) isHeld(item string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[item]
}

type writeRequest struct {
	TableName string                     `json:"TableName"`
	Key       map[string]json.RawMessage `json:"Key"`
	Item      map[string]json.RawMessage `json:"Item"`
}

// itemsOf names the items a write touches, "<table>\x00<key>" each.
func (p *ConflictProxy) itemsOf(op string, body []byte) ([]string, error) {
	var reqs []writeRequest
	if op == "TransactWriteItems" {
		var in struct {
			TransactItems []map[string]writeRequest `json:"TransactItems"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		for _, ti := range in.TransactItems {
			for _, w := range ti { // one of Put, Update, Delete, ConditionCheck
				reqs = append(reqs, w)
			}
		}
	} else {
		var w writeRequest
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, err
		}
		reqs = append(reqs, w)
	}
	out := make([]string, 0, len(reqs))
	for _, w := range reqs {
		key := w.Key
		if key == nil { // a Put names its key inside the item
			names, err := p.keyNames(w.TableName)
			if err != nil {
				return nil, err
			}
			key = map[string]json.RawMessage{}
			for _, n := range names {
				key[n] = w.Item[n]
			}
		}
		names := make([]string, 0, len(key))
		for n := range key {
			names = append(names, n)
		}
		slices.Sort(names)
		var b strings.Builder
		b.WriteString(w.TableName)
		for _, n := range names {
			var v bytes.Buffer
			if err := json.Compact(&v, key[n]); err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "\x00%s=%s", n, v.String())
		}
		out = append(out, b.String())
	}
	return out, nil
}

// learnKeys notes the key attributes of a table created through the proxy.
func (p *ConflictProxy) learnKeys(body []byte) {
	var in struct {
		TableName string `json:"TableName"`
		KeySchema []struct {
			AttributeName string `json:"AttributeName"`
		} `json:"KeySchema"`
	}
	if json.Unmarshal(body, &in) != nil || len(in.KeySchema) == 0 {
		return
	}
	names := make([]string, 0, len(in.KeySchema))
	for _, k := range in.KeySchema {
		names = append(names, k.AttributeName)
	}
	p.mu.Lock()
	p.keys[in.TableName] = names
	p.mu.Unlock()
}

// keyNames asks moto for a table's key attributes, once per table.
func (p *ConflictProxy) keyNames(table string) ([]string, error) {
	p.mu.Lock()
	names, ok := p.keys[table]
	p.mu.Unlock()
	if ok {
		return names, nil
	}
	body, _ := json.Marshal(map[string]string{"TableName": table})
	req, err := http.NewRequest(http.MethodPost, p.target.String()+"/", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", dynamoTargetPrefix+"DescribeTable")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	// A read of the table's metadata, not of items: it need not wait for
	// its turn (the transaction waiting on a Put's key may hold that turn).
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", table, err)
	}
	defer resp.Body.Close()
	var out struct {
		Table struct {
			KeySchema []struct {
				AttributeName string `json:"AttributeName"`
			} `json:"KeySchema"`
		} `json:"Table"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Table.KeySchema) == 0 {
		return nil, fmt.Errorf("describe table %s: HTTP %d: %v", table, resp.StatusCode, err)
	}
	for _, k := range out.Table.KeySchema {
		names = append(names, k.AttributeName)
	}
	p.mu.Lock()
	p.keys[table] = names
	p.mu.Unlock()
	return names, nil
}

// writeCanceled answers DynamoDB's TransactionCanceledException with a
// reason per item, in the order of the request.
func writeCanceled(w http.ResponseWriter, conflicts []bool) {
	type reason struct {
		Code    string `json:"Code"`
		Message string `json:"Message,omitempty"`
	}
	reasons := make([]reason, len(conflicts))
	codes := make([]string, len(conflicts))
	for i, c := range conflicts {
		reasons[i], codes[i] = reason{Code: "None"}, "None"
		if c {
			reasons[i], codes[i] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}, "TransactionConflict"
		}
	}
	writeDynamoJSON(w, map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})
}

func writeDynamoError(w http.ResponseWriter, typ, message string) {
	writeDynamoJSON(w, map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + typ, "message": message})
}

func writeDynamoJSON(w http.ResponseWriter, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Requestid", "conflict-proxy")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(body)
}

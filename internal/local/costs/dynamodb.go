package costs

import (
	"context"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
)

// DynamoDB is the DynamoDB client of the store (dynamostore.API) with each
// request counted in the on-demand units DynamoDB bills for it, from the
// sizes of the real items (dynamostore.ItemSize):
//
//   - GetItem: ⌈item/4 KB⌉ read units, at least 1 (an absent item too);
//     half for an eventually consistent read. A projection does not
//     lower it: the whole item is read.
//   - BatchGetItem: each key it answered (not those left unprocessed) as
//     a GetItem of its own.
//   - Query, Scan: ⌈sum of the items evaluated/4 KB⌉ (the index entries
//     for an index), before any filter, at least 1; half when eventually
//     consistent (every GSI read).
//   - PutItem, UpdateItem, DeleteItem: ⌈larger of the item before and
//     after/1 KB⌉ write units, at least 1, also when the condition fails.
//   - TransactWriteItems: twice that for each item (prepare and commit).
//   - Each index whose entry a write adds, changes or removes: ⌈entry/1 KB⌉
//     more write units per entry written or deleted.
//
// To know the sizes before and after, it reads each written item before and
// after the write, and runs each query again without its filter; those
// reads go past the meter. The time of each call is taken off the Lambda
// time of the invocation that made it (NetworkAllowance prices AWS calls).
// Local only.
type dynamoDB struct {
	dynamostore.API
	Meter   *Meter
	schemas map[string]*dynamodb.CreateTableInput
}

// MeterDynamoDB wraps the client of a store on these tables.
func MeterDynamoDB(api dynamostore.API, tables dynamostore.Tables, m *Meter) *dynamoDB {
	d := &dynamoDB{API: api, Meter: m, schemas: map[string]*dynamodb.CreateTableInput{}}
	for _, s := range dynamostore.Schema(tables) {
		d.schemas[aws.ToString(s.TableName)] = s
	}
	return d
}

// request counts one request made through the meter (the meter's own
// size reads go past it) and takes its time off the invocation's.
func (d *dynamoDB) request(ctx context.Context, start time.Time) {
	d.Meter.ddbRequests.Add(1)
	waitedSince(ctx, start)
}

func readUnits(bytes int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(bytes)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

func writeUnits(bytes int) float64 { return math.Max(1, math.Ceil(float64(bytes)/1024)) }

func (d *dynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	defer d.request(ctx, time.Now())
	out, err := d.API.GetItem(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	item := out.Item
	if in.ProjectionExpression != nil {
		item = d.item(ctx, aws.ToString(in.TableName), in.Key)
	}
	d.Meter.read(readUnits(dynamostore.ItemSize(item), aws.ToBool(in.ConsistentRead)))
	return out, nil
}

func (d *dynamoDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	defer d.request(ctx, time.Now())
	out, err := d.API.BatchGetItem(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	for table, ka := range in.RequestItems {
		consistent := aws.ToBool(ka.ConsistentRead)
		asked := len(ka.Keys) - len(out.UnprocessedKeys[table].Keys)
		for _, it := range out.Responses[table] {
			d.Meter.read(readUnits(dynamostore.ItemSize(it), consistent))
		}
		// A key with no item is billed as a GetItem of an absent item.
		for range asked - len(out.Responses[table]) {
			d.Meter.read(readUnits(0, consistent))
		}
	}
	return out, nil
}

// item reads an item whole, past the meter (nil when absent or unreadable).
func (d *dynamoDB) item(ctx context.Context, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	out, err := d.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil
	}
	return out.Item
}

// keyOf is the primary key of an item of the table.
func (d *dynamoDB) keyOf(table string, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{}
	if s, ok := d.schemas[table]; ok {
		for _, e := range s.KeySchema {
			k[aws.ToString(e.AttributeName)] = item[aws.ToString(e.AttributeName)]
		}
	}
	return k
}

// written counts a write of one item that was before and is after (either
// nil when absent), times factor, with its index entries.
func (d *dynamoDB) written(table string, before, after map[string]types.AttributeValue, factor float64) {
	d.Meter.write(factor * writeUnits(max(dynamostore.ItemSize(before), dynamostore.ItemSize(after))))
	s, ok := d.schemas[table]
	if !ok {
		return
	}
	type index struct {
		keys       []types.KeySchemaElement
		projection *types.Projection
	}
	var indexes []index
	for _, g := range s.GlobalSecondaryIndexes {
		indexes = append(indexes, index{g.KeySchema, g.Projection})
	}
	for _, l := range s.LocalSecondaryIndexes {
		indexes = append(indexes, index{l.KeySchema, l.Projection})
	}
	for _, ix := range indexes {
		was, is := entry(s.KeySchema, ix.keys, ix.projection, before), entry(s.KeySchema, ix.keys, ix.projection, after)
		switch {
		case was == nil && is == nil:
		case was == nil:
			d.Meter.write(writeUnits(dynamostore.ItemSize(is)))
		case is == nil:
			d.Meter.write(writeUnits(dynamostore.ItemSize(was)))
		case !sameAttrs(pick(was, ix.keys), pick(is, ix.keys)):
			d.Meter.write(writeUnits(dynamostore.ItemSize(was)) + writeUnits(dynamostore.ItemSize(is)))
		case !sameAttrs(was, is):
			d.Meter.write(writeUnits(max(dynamostore.ItemSize(was), dynamostore.ItemSize(is))))
		}
	}
}

// entry is an item's entry in an index: nil when the item lacks an index
// key attribute (a sparse index), else the projected attributes.
func entry(tableKeys, indexKeys []types.KeySchemaElement, p *types.Projection, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	for _, k := range indexKeys {
		if _, ok := item[aws.ToString(k.AttributeName)]; !ok {
			return nil
		}
	}
	if p != nil && p.ProjectionType == types.ProjectionTypeAll {
		return item
	}
	e := pick(item, append(append([]types.KeySchemaElement{}, tableKeys...), indexKeys...))
	if p != nil {
		for _, a := range p.NonKeyAttributes {
			if v, ok := item[a]; ok {
				e[a] = v
			}
		}
	}
	return e
}

func pick(item map[string]types.AttributeValue, keys []types.KeySchemaElement) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for _, k := range keys {
		if v, ok := item[aws.ToString(k.AttributeName)]; ok {
			out[aws.ToString(k.AttributeName)] = v
		}
	}
	return out
}

func sameAttrs(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || dynamostore.AttributeSize(v) != dynamostore.AttributeSize(w) || !sameValue(v, w) {
			return false
		}
	}
	return true
}

func sameValue(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		return ok && x.Value == y.Value
	}
	// Lists, maps and the rest: taken as changed when the sizes match but
	// the values cannot be compared cheaply (an upper bound).
	return false
}

func (d *dynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	defer d.request(ctx, time.Now())
	table := aws.ToString(in.TableName)
	before := d.item(ctx, table, d.keyOf(table, in.Item))
	out, err := d.API.PutItem(ctx, in, opts...)
	after := in.Item
	if err != nil {
		after = before // nothing changed, the units are billed still
	}
	d.written(table, before, after, 1)
	return out, err
}

func (d *dynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	defer d.request(ctx, time.Now())
	table := aws.ToString(in.TableName)
	before := d.item(ctx, table, in.Key)
	out, err := d.API.UpdateItem(ctx, in, opts...)
	after := before
	if err == nil {
		after = d.item(ctx, table, in.Key)
	}
	d.written(table, before, after, 1)
	return out, err
}

func (d *dynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	defer d.request(ctx, time.Now())
	table := aws.ToString(in.TableName)
	before := d.item(ctx, table, in.Key)
	out, err := d.API.DeleteItem(ctx, in, opts...)
	var after map[string]types.AttributeValue
	if err != nil {
		after = before
	}
	d.written(table, before, after, 1)
	return out, err
}

// TransactWriteItems counts each item twice; a cancelled transaction is
// counted as a completed one would be (an upper bound).
func (d *dynamoDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	defer d.request(ctx, time.Now())
	type target struct {
		table string
		key   map[string]types.AttributeValue
		put   map[string]types.AttributeValue
	}
	targets := make([]target, 0, len(in.TransactItems))
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			t := aws.ToString(it.Put.TableName)
			targets = append(targets, target{t, d.keyOf(t, it.Put.Item), it.Put.Item})
		case it.Update != nil:
			targets = append(targets, target{table: aws.ToString(it.Update.TableName), key: it.Update.Key})
		case it.Delete != nil:
			targets = append(targets, target{table: aws.ToString(it.Delete.TableName), key: it.Delete.Key})
		case it.ConditionCheck != nil:
			targets = append(targets, target{table: aws.ToString(it.ConditionCheck.TableName), key: it.ConditionCheck.Key})
		}
	}
	befores := make([]map[string]types.AttributeValue, len(targets))
	for i, t := range targets {
		befores[i] = d.item(ctx, t.table, t.key)
	}
	out, err := d.API.TransactWriteItems(ctx, in, opts...)
	for i, t := range targets {
		after := befores[i]
		if err == nil {
			after = d.item(ctx, t.table, t.key)
		}
		d.written(t.table, befores[i], after, 2)
	}
	return out, err
}

func (d *dynamoDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	defer d.request(ctx, time.Now())
	out, err := d.API.Query(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	// The same page, unfiltered and whole, to size what was evaluated.
	all := *in
	all.FilterExpression, all.ProjectionExpression = nil, nil
	all.Select = types.SelectAllAttributes
	if in.IndexName != nil {
		all.Select = types.SelectAllProjectedAttributes
	}
	all.ExpressionAttributeNames = usedNames(in.ExpressionAttributeNames, aws.ToString(in.KeyConditionExpression))
	all.ExpressionAttributeValues = usedValues(in.ExpressionAttributeValues, aws.ToString(in.KeyConditionExpression))
	size := 0
	if page, err := d.API.Query(ctx, &all); err == nil {
		size = itemsSize(page.Items)
	}
	d.Meter.read(readUnits(size, aws.ToBool(in.ConsistentRead)))
	return out, nil
}

func (d *dynamoDB) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	defer d.request(ctx, time.Now())
	out, err := d.API.Scan(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	all := *in
	all.FilterExpression, all.ProjectionExpression, all.ExpressionAttributeNames, all.ExpressionAttributeValues = nil, nil, nil, nil
	all.Select = types.SelectAllAttributes
	size := 0
	if page, err := d.API.Scan(ctx, &all); err == nil {
		size = itemsSize(page.Items)
	}
	d.Meter.read(readUnits(size, aws.ToBool(in.ConsistentRead)))
	return out, nil
}

func itemsSize(items []map[string]types.AttributeValue) int {
	n := 0
	for _, it := range items {
		n += dynamostore.ItemSize(it)
	}
	return n
}

// usedNames and usedValues keep the placeholders an expression uses
// (DynamoDB refuses unused ones).
func usedNames(names map[string]string, expr string) map[string]string {
	var out map[string]string
	for k, v := range names {
		if containsToken(expr, k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func usedValues(values map[string]types.AttributeValue, expr string) map[string]types.AttributeValue {
	var out map[string]types.AttributeValue
	for k, v := range values {
		if containsToken(expr, k) {
			if out == nil {
				out = map[string]types.AttributeValue{}
			}
			out[k] = v
		}
	}
	return out
}

// containsToken: the placeholder appears in the expression, not only as
// the start of a longer one.
func containsToken(expr, tok string) bool {
	for i := 0; i+len(tok) <= len(expr); i++ {
		if expr[i:i+len(tok)] != tok {
			continue
		}
		end := i + len(tok)
		if end == len(expr) || !isNameChar(expr[end]) {
			return true
		}
	}
	return false
}

func isNameChar(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

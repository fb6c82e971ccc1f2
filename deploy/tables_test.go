package deploy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
)

const stackName = "STACK"

// tableNames maps each AWS::DynamoDB::Table to its name in a stack called
// STACK (TableName !Sub ${AWS::StackName}-<name>).
func tableNames(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, r := range tmpl(t).Resources {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		text, vars, ok := sub(r.Properties["TableName"])
		if !ok || vars != nil || !strings.HasPrefix(text, "${AWS::StackName}-") || len(placeholders(text)) != 1 {
			t.Errorf("%s: TableName is %s, want !Sub ${AWS::StackName}-<name> (mediagen --table-prefix <stack> finds it)", name, show(r.Properties["TableName"]))
			continue
		}
		out[name] = strings.ReplaceAll(text, "${AWS::StackName}", stackName)
	}
	return out
}

func keySchema(keys any) []string {
	var out []string
	list, _ := keys.([]any)
	for _, k := range list {
		km, _ := k.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v", km["AttributeName"], km["KeyType"]))
	}
	return out
}

func TestTablesMatchTheStoresSchema(t *testing.T) {
	tpl := tmpl(t)
	names := tableNames(t)
	byName := map[string]string{}
	for res, name := range names {
		byName[name] = res
	}
	schema := dynamostore.Schema(dynamostore.TablesWithPrefix(stackName))
	for _, want := range schema {
		name := aws.ToString(want.TableName)
		res, ok := byName[name]
		if !ok {
			t.Errorf("dynamostore.Schema declares table %s; template.yaml has no AWS::DynamoDB::Table with TableName !Sub ${AWS::StackName}-%s", name, strings.TrimPrefix(name, stackName+"-"))
			continue
		}
		delete(byName, name)
		compareTable(t, res, want, tpl.Resources[res].Properties)
	}
	for name, res := range byName {
		t.Errorf("%s: table %s is not in dynamostore.Schema, so no code uses it", res, name)
	}

	// The *_TABLE variables name the tables whose schema the store expects
	// under that name: a swapped Ref would pass every other check.
	refTable := map[string]string{}
	for v, val := range globalVariables(tpl) {
		if res, ok := ref(val); ok && strings.HasSuffix(v, "_TABLE") {
			refTable[v] = names[res]
		}
	}
	got := dynamostore.TablesFromEnv(func(k string) string { return refTable[k] })
	if got != dynamostore.TablesWithPrefix(stackName) {
		t.Errorf("Globals.Function's *_TABLE variables name the tables %+v; the store expects %+v", got, dynamostore.TablesWithPrefix(stackName))
	}

	for res := range names {
		p := tpl.Resources[res].Properties
		if p["BillingMode"] != "PAY_PER_REQUEST" {
			t.Errorf("%s: BillingMode is %s, want PAY_PER_REQUEST (on-demand)", res, show(p["BillingMode"]))
		}
		if pitr, _ := p["PointInTimeRecoverySpecification"].(map[string]any); pitr["PointInTimeRecoveryEnabled"] != true {
			t.Errorf("%s: PointInTimeRecoverySpecification is %s, want PointInTimeRecoveryEnabled: true", res, show(p["PointInTimeRecoverySpecification"]))
		}
		// DynamoDB encrypts every table at rest. Without SSESpecification
		// (or with SSEEnabled false) the key is the AWS owned key, free;
		// SSEEnabled true makes it KMS (the AWS managed key aws/dynamodb, or
		// KMSMasterKeyId), billed per request (AWS::DynamoDB::Table
		// SSESpecification).
		if sse, ok := p["SSESpecification"].(map[string]any); ok && (sse["SSEEnabled"] != false || sse["KMSMasterKeyId"] != nil || sse["SSEType"] != nil) {
			t.Errorf("%s: SSESpecification is %s, which encrypts with KMS, billed per request; omit it (the AWS owned key, free)", res, show(p["SSESpecification"]))
		} else if !ok && p["SSESpecification"] != nil {
			t.Errorf("%s: SSESpecification is %s", res, show(p["SSESpecification"]))
		}
	}
	// The TTL of each table is the store's (dynamostore.TTLAttribute), set
	// here and by `mediagen tables create`, never by the code at run time.
	ttls := dynamostore.TTLAttribute(dynamostore.TablesWithPrefix(stackName))
	for res, name := range names {
		ttl, _ := tpl.Resources[res].Properties["TimeToLiveSpecification"].(map[string]any)
		want, ok := ttls[name]
		switch {
		case ok && (ttl["AttributeName"] != want || ttl["Enabled"] != true):
			t.Errorf("%s: TimeToLiveSpecification is %s, want {AttributeName: %s, Enabled: true} (dynamostore.TTLAttribute)", res, show(ttl), want)
		case !ok && ttl != nil:
			t.Errorf("%s: TimeToLiveSpecification %s, but the store keeps no TTL attribute on it", res, show(ttl))
		}
	}
}

func compareTable(t *testing.T, res string, want *dynamodb.CreateTableInput, p map[string]any) {
	t.Helper()
	wantKeys := schemaKeys(want.KeySchema)
	if got := keySchema(p["KeySchema"]); !slices.Equal(got, wantKeys) {
		t.Errorf("%s: KeySchema is %v, dynamostore.Schema says %v", res, got, wantKeys)
	}

	var wantAttrs, gotAttrs []string
	for _, a := range want.AttributeDefinitions {
		wantAttrs = append(wantAttrs, fmt.Sprintf("%s %s", aws.ToString(a.AttributeName), a.AttributeType))
	}
	attrs, _ := p["AttributeDefinitions"].([]any)
	for _, a := range attrs {
		am, _ := a.(map[string]any)
		gotAttrs = append(gotAttrs, fmt.Sprintf("%v %v", am["AttributeName"], am["AttributeType"]))
	}
	sort.Strings(wantAttrs)
	sort.Strings(gotAttrs)
	if !slices.Equal(gotAttrs, wantAttrs) {
		t.Errorf("%s: AttributeDefinitions are %v, dynamostore.Schema says %v", res, gotAttrs, wantAttrs)
	}

	wantGSI, wantLSI := map[string]string{}, map[string]string{}
	for _, g := range want.GlobalSecondaryIndexes {
		wantGSI[aws.ToString(g.IndexName)] = describeIndex(schemaKeys(g.KeySchema), g.Projection.ProjectionType)
	}
	for _, l := range want.LocalSecondaryIndexes {
		wantLSI[aws.ToString(l.IndexName)] = describeIndex(schemaKeys(l.KeySchema), l.Projection.ProjectionType)
	}
	compareIndexes(t, res, "global", templateIndexes(t, res, p["GlobalSecondaryIndexes"]), wantGSI)
	compareIndexes(t, res, "local", templateIndexes(t, res, p["LocalSecondaryIndexes"]), wantLSI)
}

func describeIndex(keys []string, projection any) string {
	return fmt.Sprintf("keys %v, projection %v", keys, projection)
}

func schemaKeys(keys []types.KeySchemaElement) []string {
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %s", aws.ToString(k.AttributeName), k.KeyType))
	}
	return out
}

// templateIndexes describes a table's GlobalSecondaryIndexes or
// LocalSecondaryIndexes of the template, by name.
func templateIndexes(t *testing.T, res string, list any) map[string]string {
	t.Helper()
	out := map[string]string{}
	indexes, _ := list.([]any)
	for _, x := range indexes {
		m, _ := x.(map[string]any)
		proj, _ := m["Projection"].(map[string]any)
		if extra, ok := proj["NonKeyAttributes"]; ok {
			t.Errorf("%s: index %v projects NonKeyAttributes %s, which the store does not declare", res, m["IndexName"], show(extra))
		}
		out[fmt.Sprint(m["IndexName"])] = describeIndex(keySchema(m["KeySchema"]), proj["ProjectionType"])
	}
	return out
}

func compareIndexes(t *testing.T, res, kind string, got, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: no %s secondary index %s (%s), which the store queries", res, kind, name, w)
		} else if g != w {
			t.Errorf("%s: index %s has %s, dynamostore.Schema says %s", res, name, g, w)
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: %s secondary index %s (%s) is not in dynamostore.Schema", res, kind, name, g)
		}
	}
}

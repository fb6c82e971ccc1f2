package deploy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
)

// Each function's DynamoDB permissions follow from its code, not from a
// list kept by hand:
//
//   - deploy/internal/reach finds the methods of the DynamoDB adapter that
//     each function's program can call (call edges from its main);
//   - dynamostore.Accesses says which requests each method makes on which
//     table or index, and the adapter's tests check that declaration
//     against the requests the methods make;
//   - the template, expanded by aws-sam-translator as `sam deploy` expands
//     it, must grant exactly those actions on exactly those tables and
//     indexes.

var (
	reachOnce sync.Once
	reached   map[string][]string
	reachErr  error
)

// reachable is deploy/internal/reach's answer: function folder → the Store
// methods its code can call. It runs once per test binary, outside the
// race detector (go run), which would make it several times slower.
func reachable(t *testing.T) map[string][]string {
	t.Helper()
	reachOnce.Do(func() {
		cmd := exec.Command("go", "run", "./deploy/internal/reach")
		cmd.Dir = ".."
		cmd.Stderr = os.Stderr
		var out []byte
		if out, reachErr = cmd.Output(); reachErr == nil {
			reachErr = json.Unmarshal(out, &reached)
		}
	})
	if reachErr != nil {
		t.Fatalf("deploy/internal/reach: %v", reachErr)
	}
	return reached
}

// tableResources maps each field of dynamostore.Tables to the template's
// table: the field's variable (TablesFromEnv) is !Ref of that table in
// Globals.Function.
func tableResources(t *testing.T) map[string]string {
	t.Helper()
	globals := globalVariables(tmpl(t))
	var fields map[string]string
	raw, _ := json.Marshal(dynamostore.TablesFromEnv(func(v string) string { return v }))
	json.Unmarshal(raw, &fields) // field → the variable that names it
	out := map[string]string{}
	for field, variable := range fields {
		res, ok := ref(globals[variable])
		if !ok {
			t.Fatalf("Globals.Function.Environment.Variables.%s is %s, want !Ref <table> (dynamostore.Tables.%s)", variable, show(globals[variable]), field)
		}
		out[field] = res
	}
	return out
}

// accessTarget is the target form of the policies tests for an access.
func accessTarget(tables map[string]string, a dynamostore.Access) string {
	if a.Index != "" {
		return "index:" + tables[a.Table] + "/" + a.Index
	}
	return "table:" + tables[a.Table]
}

var (
	dynamoOnce sync.Once
	dynamoOf   map[string][]use
)

// dynamoUses is each function's DynamoDB calls (by logical ID), derived from
// its code: a use per table or index.
func dynamoUses(t *testing.T) map[string][]use {
	t.Helper()
	reach := reachable(t)
	tables := tableResources(t)
	dynamoOnce.Do(func() {
		dynamoOf = map[string][]use{}
		for _, f := range functions {
			actions, why := map[string]map[string]bool{}, map[string][]string{}
			for _, m := range reach[f.Folder] {
				for _, a := range dynamostore.Accesses[m] {
					target := accessTarget(tables, a)
					if actions[target] == nil {
						actions[target] = map[string]bool{}
					}
					actions[target]["dynamodb:"+a.Action] = true
					if !slices.Contains(why[target], m) {
						why[target] = append(why[target], m)
					}
				}
			}
			for _, target := range sortedKeys(actions) {
				dynamoOf[f.ID] = append(dynamoOf[f.ID], use{target: target, actions: sortedKeys(actions[target]),
					why: "Store." + strings.Join(why[target], ", Store.")})
			}
		}
	})
	return dynamoOf
}

// allUses is usesOf with each function's DynamoDB calls added.
func allUses(t *testing.T) map[string][]use {
	t.Helper()
	out := map[string][]use{}
	for name, us := range usesOf {
		out[name] = slices.Clone(us)
	}
	for name, us := range dynamoUses(t) {
		out[name] = append(out[name], us...)
	}
	return out
}

// expanded is template.yaml as aws-sam-translator expands it.
func expanded(t *testing.T) map[string]any {
	t.Helper()
	path, err := filepath.Abs("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Expand(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// managedWithoutDynamoDB are the AWS managed policies SAM attaches to the
// functions' roles; none grants a DynamoDB action.
var managedWithoutDynamoDB = []string{
	"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
	"arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
	"arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole",
}

var indexARN = regexp.MustCompile(`^\$\{([A-Za-z0-9]+)\.Arn\}/index/([A-Za-z0-9._-]+)$`)

// effectiveDynamoDB is every DynamoDB action the function's expanded role
// allows, as "action target".
func effectiveDynamoDB(t *testing.T, doc map[string]any, function string) map[string]bool {
	t.Helper()
	resources, _ := doc["Resources"].(map[string]any)
	fn, _ := resources[function].(map[string]any)
	props, _ := fn["Properties"].(map[string]any)
	roleName, attr, ok := getAtt(props["Role"])
	if !ok || attr != "Arn" {
		t.Fatalf("%s: Role is %s, want the role SAM makes (!GetAtt <role>.Arn)", function, show(props["Role"]))
	}
	role, _ := resources[roleName].(map[string]any)
	roleProps, _ := role["Properties"].(map[string]any)
	managed, _ := roleProps["ManagedPolicyArns"].([]any)
	for _, m := range managed {
		if s, _ := m.(string); !slices.Contains(managedWithoutDynamoDB, s) {
			t.Errorf("%s: managed policy %s, whose DynamoDB actions this test cannot see", function, show(m))
		}
	}
	got := map[string]bool{}
	policies, _ := roleProps["Policies"].([]any)
	for _, p := range policies {
		pm, _ := p.(map[string]any)
		doc, _ := pm["PolicyDocument"].(map[string]any)
		stmts, _ := doc["Statement"].([]any)
		for _, s := range stmts {
			sm, _ := s.(map[string]any)
			actions, _ := stringList(sm["Action"])
			var dynamo []string
			for _, a := range actions {
				if strings.HasPrefix(strings.ToLower(a), "dynamodb:") || a == "*" {
					dynamo = append(dynamo, a)
				}
			}
			if len(dynamo) == 0 {
				continue
			}
			if sm["Effect"] != "Allow" {
				t.Errorf("%s: %s statement %s", function, show(sm["Effect"]), show(sm))
				continue
			}
			res := sm["Resource"]
			list, isList := res.([]any)
			if !isList {
				list = []any{res}
			}
			for _, r := range list {
				var target string
				if x, attr, ok := getAtt(r); ok && attr == "Arn" {
					target = "table:" + x
				} else if text, vars, ok := sub(r); ok && vars == nil && indexARN.MatchString(text) {
					m := indexARN.FindStringSubmatch(text)
					target = "index:" + m[1] + "/" + m[2]
				} else {
					t.Errorf("%s: %v on %s: name a table (!GetAtt <table>.Arn) or an index (!Sub ${<table>.Arn}/index/<name>)", function, dynamo, show(r))
					continue
				}
				for _, a := range dynamo {
					if strings.ContainsAny(a, "*?") {
						t.Errorf("%s: wildcard action %s on %s", function, a, target)
					}
					got[a+" "+target] = true
				}
			}
		}
	}
	return got
}

// TestEveryFunctionsDynamoDBPermissionsAreExactlyWhatItsCodeCalls reads the
// template as aws-sam-translator expands it and compares each function's
// DynamoDB actions with the requests of the adapter methods its code can
// call.
func TestEveryFunctionsDynamoDBPermissionsAreExactlyWhatItsCodeCalls(t *testing.T) {
	doc := expanded(t)
	derived := dynamoUses(t)
	for _, f := range functions {
		want := map[string]bool{}
		why := map[string]string{}
		for _, u := range derived[f.ID] {
			for _, a := range u.actions {
				want[a+" "+u.target] = true
				why[a+" "+u.target] = u.why
			}
		}
		got := effectiveDynamoDB(t, doc, f.ID)
		for _, k := range sortedKeys(want) {
			if !got[k] {
				t.Errorf("%s: its code calls %s (%s), but its expanded role does not allow it", f.ID, k, why[k])
			}
		}
		for _, k := range sortedKeys(got) {
			if !want[k] {
				t.Errorf("%s: its expanded role allows %s, which its code never calls", f.ID, k)
			}
		}
		t.Logf("%s: %d DynamoDB actions, from Store.%s", f.ID, len(want), strings.Join(reachable(t)[f.Folder], ", Store."))
	}
}

// TestNoLambdaScansATable: no adapter method that a function's code can
// call makes a Scan (the sweeper reads the open-holds index; a Scan reads,
// and bills, the whole table).
func TestNoLambdaScansATable(t *testing.T) {
	reach := reachable(t)
	scanners := map[string]bool{}
	for m, accesses := range dynamostore.Accesses {
		for _, a := range accesses {
			if a.Action == "Scan" {
				scanners[m] = true
			}
		}
	}
	if len(scanners) == 0 {
		t.Log("no Store method scans")
	}
	for _, f := range functions {
		methods, ok := reach[f.Folder]
		if !ok {
			t.Errorf("deploy/internal/reach says nothing of functions/%s", f.Folder)
		}
		for _, m := range methods {
			if scanners[m] {
				t.Errorf("%s can call Store.%s, which scans a table", f.ID, m)
			}
		}
	}
	t.Logf("Store methods that scan, called by no function: %v", sortedKeys(scanners))
	if !slices.Contains(reach["sweeper"], "OpenHolds") {
		t.Errorf("the sweeper does not call Store.OpenHolds: %v", reach["sweeper"])
	}
}

// TestCfnLintReportsNoError runs cfn-lint on the template: errors and
// warnings fail, informational notes are shown.
func TestCfnLintReportsNoError(t *testing.T) {
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint is missing (fix: pip install cfn-lint==1.51.0): %v", err)
	}
	cmd := exec.Command(bin, "--format", "parseable", "../template.yaml")
	out, err := cmd.CombinedOutput()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	// cfn-lint's exit code is a bit mask: 2 errors, 4 warnings, 8 notes.
	if code&(2|4) != 0 || code&^(2|4|8) != 0 {
		t.Errorf("cfn-lint template.yaml exited %d (2: errors, 4: warnings):\n%s", code, out)
	} else if len(out) > 0 {
		t.Logf("cfn-lint (no error, no warning):\n%s", out)
	}
}

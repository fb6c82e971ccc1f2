package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// samExpand is what aws-sam-translator makes of a template, as `sam deploy`
// transforms it after `sam package` has put the code in S3 (the local
// CodeUri, DefinitionUri and ContentUri become S3 URIs first).
const samExpand = `
import json, sys
from samtranslator.yaml_helper import yaml_parse
from samtranslator.translator.transform import transform

class NoManagedPolicyNames:
    def load(self):
        return {}

tpl = yaml_parse(open(sys.argv[1]).read())
for scope in [tpl.get("Globals", {}).get("Function", {})] + [r.get("Properties", {}) for r in tpl["Resources"].values()]:
    for k in ("CodeUri", "DefinitionUri", "ContentUri"):
        if isinstance(scope.get(k), str) and not scope[k].startswith("s3://"):
            scope[k] = "s3://packaged/" + k
json.dump(transform(tpl, {}, NoManagedPolicyNames()), sys.stdout, default=str)
`

// SAMTranslatorFix is the one line that says how to get aws-sam-translator.
const SAMTranslatorFix = "pip install aws-sam-translator==1.110.0"

// Expand is the template at path as aws-sam-translator expands it for
// `sam deploy`: plain CloudFormation (AWS::Lambda::Function, AWS::IAM::Role
// with the policies SAM attaches, AWS::ApiGatewayV2::Api with its OpenAPI
// body, AWS::Lambda::EventSourceMapping, ...), its intrinsic functions
// left for the deployment to resolve.
func Expand(ctx context.Context, path string) (map[string]any, error) {
	cmd := exec.CommandContext(ctx, "python3", "-c", samExpand, path)
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION=us-east-1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("aws-sam-translator does not expand %s: %w\n%s\n(fix: %s)", path, err, stderr.String(), SAMTranslatorFix)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("aws-sam-translator's expansion of %s: %w", path, err)
	}
	return doc, nil
}

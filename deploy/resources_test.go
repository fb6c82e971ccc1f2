package deploy

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/local/costs"
)

// stringsOf reads a list of strings (nil when it is not one).
func stringsOf(v any) []string {
	s, _ := stringList(v)
	return s
}

func TestTheBucketIsPrivateEncryptedAndServedByCloudFront(t *testing.T) {
	tpl := tmpl(t)
	b := resource(t, "OutputBucket", "AWS::S3::Bucket").Properties
	pab, _ := b["PublicAccessBlockConfiguration"].(map[string]any)
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if pab[k] != true {
			t.Errorf("OutputBucket: PublicAccessBlockConfiguration.%s is %s, want true", k, show(pab[k]))
		}
	}
	enc, _ := b["BucketEncryption"].(map[string]any)
	rules, _ := enc["ServerSideEncryptionConfiguration"].([]any)
	algo := ""
	if len(rules) == 1 {
		def, _ := rules[0].(map[string]any)["ServerSideEncryptionByDefault"].(map[string]any)
		algo, _ = def["SSEAlgorithm"].(string)
	}
	if algo != "AES256" && algo != "aws:kms" {
		t.Errorf("OutputBucket: BucketEncryption is %s, want one default rule with SSEAlgorithm AES256 or aws:kms", show(enc))
	}
	if algo == "aws:kms" {
		t.Errorf("OutputBucket: SSE-KMS with the AWS managed key cannot be read through CloudFront's origin access control; use AES256 or a customer key whose policy admits cloudfront.amazonaws.com")
	}
	own, _ := b["OwnershipControls"].(map[string]any)
	if orules, _ := own["Rules"].([]any); len(orules) != 1 || orules[0].(map[string]any)["ObjectOwnership"] != "BucketOwnerEnforced" {
		t.Errorf("OutputBucket: OwnershipControls is %s, want BucketOwnerEnforced (ACLs off)", show(own))
	}
	lc, _ := b["LifecycleConfiguration"].(map[string]any)
	abort := false
	lrules, _ := lc["Rules"].([]any)
	for _, r := range lrules {
		rm, _ := r.(map[string]any)
		if a, _ := rm["AbortIncompleteMultipartUpload"].(map[string]any); rm["Status"] == "Enabled" && a["DaysAfterInitiation"] == 1 {
			abort = true
		}
	}
	if !abort {
		t.Errorf("OutputBucket: no enabled lifecycle rule aborts incomplete multipart uploads after 1 day (the uploads are streamed in parts)")
	}

	// The only reader is the distribution, through origin access control.
	policy := resource(t, "OutputBucketPolicy", "AWS::S3::BucketPolicy").Properties
	if x, _ := ref(policy["Bucket"]); x != "OutputBucket" {
		t.Errorf("OutputBucketPolicy: Bucket is %s, want !Ref OutputBucket", show(policy["Bucket"]))
	}
	doc, _ := policy["PolicyDocument"].(map[string]any)
	stmts, _ := doc["Statement"].([]any)
	cloudfront := false
	for i, s := range stmts {
		sm, _ := s.(map[string]any)
		if sm["Effect"] != "Allow" {
			continue
		}
		principal, _ := sm["Principal"].(map[string]any)
		cond, _ := sm["Condition"].(map[string]any)
		eq, _ := cond["StringEquals"].(map[string]any)
		text, _, _ := sub(eq["AWS:SourceArn"])
		// The published keys only (media.Published): a long video's
		// scratch is never served.
		var targets []string
		resources, _ := sm["Resource"].([]any)
		var err error
		for _, r := range resources {
			target, terr := statementTarget(tpl, r)
			err = errors.Join(err, terr)
			targets = append(targets, target)
		}
		published := []string{"object:OutputBucket/generations/*", "object:OutputBucket/long-videos/*/final.mp4", "object:OutputBucket/long-videos/*/captions.vtt", "object:OutputBucket/voices/*/preview.mp3"}
		if principal["Service"] != "cloudfront.amazonaws.com" || !slices.Equal(stringsOf(sm["Action"]), []string{"s3:GetObject"}) ||
			err != nil || !slices.Equal(targets, published) || !strings.HasSuffix(text, ":distribution/${MediaDistribution}") {
			t.Errorf("OutputBucketPolicy.Statement[%d] allows %s; the only Allow is s3:GetObject on %v for cloudfront.amazonaws.com with AWS:SourceArn the MediaDistribution", i, show(sm), published)
			continue
		}
		cloudfront = true
	}
	if !cloudfront {
		t.Errorf("OutputBucketPolicy does not let MediaDistribution read the objects (cloudfront.amazonaws.com, AWS:SourceArn)")
	}

	oac := resource(t, "MediaOriginAccessControl", "AWS::CloudFront::OriginAccessControl").Properties
	oc, _ := oac["OriginAccessControlConfig"].(map[string]any)
	if oc["OriginAccessControlOriginType"] != "s3" || oc["SigningBehavior"] != "always" || oc["SigningProtocol"] != "sigv4" {
		t.Errorf("MediaOriginAccessControl: %s, want an s3 origin type signing always with sigv4", show(oc))
	}
	dist := resource(t, "MediaDistribution", "AWS::CloudFront::Distribution").Properties
	dc, _ := dist["DistributionConfig"].(map[string]any)
	origins, _ := dc["Origins"].([]any)
	if len(origins) != 1 {
		t.Fatalf("MediaDistribution: Origins is %s, want the output bucket alone", show(dc["Origins"]))
	}
	o, _ := origins[0].(map[string]any)
	s3o, _ := o["S3OriginConfig"].(map[string]any)
	if bucket, attr, _ := getAtt(o["DomainName"]); bucket != "OutputBucket" || attr != "RegionalDomainName" {
		t.Errorf("MediaDistribution: the origin's DomainName is %s, want !GetAtt OutputBucket.RegionalDomainName", show(o["DomainName"]))
	}
	if x, attr, _ := getAtt(o["OriginAccessControlId"]); x != "MediaOriginAccessControl" || attr != "Id" || s3o["OriginAccessIdentity"] != "" {
		t.Errorf("MediaDistribution: the origin is %s, want OriginAccessControlId !GetAtt MediaOriginAccessControl.Id and an empty S3OriginConfig.OriginAccessIdentity", show(o))
	}
	dcb, _ := dc["DefaultCacheBehavior"].(map[string]any)
	if vpp := dcb["ViewerProtocolPolicy"]; vpp != "redirect-to-https" && vpp != "https-only" {
		t.Errorf("MediaDistribution: ViewerProtocolPolicy is %s, want HTTPS", show(vpp))
	}
	if m := stringsOf(dcb["AllowedMethods"]); !slices.Equal(m, []string{"GET", "HEAD"}) {
		t.Errorf("MediaDistribution: AllowedMethods is %v, want [GET HEAD] (read only)", m)
	}
	if dc["Enabled"] != true || dcb["TargetOriginId"] != o["Id"] {
		t.Errorf("MediaDistribution: not enabled, or its default behavior does not target the bucket origin")
	}
	if cb, _ := dc["CacheBehaviors"].([]any); len(cb) != 0 {
		t.Errorf("MediaDistribution: CacheBehaviors %s; the default behavior, read only, is the only one", show(dc["CacheBehaviors"]))
	}
	// The managed CachingOptimized policy forwards no query string, so no
	// listing or response-header override reaches the bucket.
	if dcb["CachePolicyId"] != "658327ea-f89d-4fab-a63d-7e88639e58f6" {
		t.Errorf("MediaDistribution: CachePolicyId %s, want Managed-CachingOptimized (no query string forwarded)", show(dcb["CachePolicyId"]))
	}
	// Its one CORS rule is the uploads' PUT (TestTheBucketsCORSRuleIsTheUploadsOnly):
	// no rule lets a page read.
	cors, _ := b["CorsConfiguration"].(map[string]any)
	corsRules, _ := cors["CorsRules"].([]any)
	for _, r := range corsRules {
		rm, _ := r.(map[string]any)
		if m := stringsOf(rm["AllowedMethods"]); slices.Contains(m, "GET") || slices.Contains(m, "HEAD") {
			t.Errorf("OutputBucket: a CORS rule %s allows %v; no page may read the outputs across origins", show(rm), m)
		}
	}

	// Every answer is a file, never a page: nosniff and a CSP sandbox.
	if x, _ := ref(dcb["ResponseHeadersPolicyId"]); x != "MediaResponseHeadersPolicy" {
		t.Fatalf("MediaDistribution: ResponseHeadersPolicyId is %s, want !Ref MediaResponseHeadersPolicy", show(dcb["ResponseHeadersPolicyId"]))
	}
	rhp := resource(t, "MediaResponseHeadersPolicy", "AWS::CloudFront::ResponseHeadersPolicy").Properties
	cfg, _ := rhp["ResponseHeadersPolicyConfig"].(map[string]any)
	sec, _ := cfg["SecurityHeadersConfig"].(map[string]any)
	cto, _ := sec["ContentTypeOptions"].(map[string]any)
	csp, _ := sec["ContentSecurityPolicy"].(map[string]any)
	if cto["Override"] != true {
		t.Errorf("MediaResponseHeadersPolicy: ContentTypeOptions %s, want X-Content-Type-Options: nosniff overriding the origin's", show(cto))
	}
	if csp["ContentSecurityPolicy"] != "sandbox" || csp["Override"] != true {
		t.Errorf("MediaResponseHeadersPolicy: ContentSecurityPolicy %s, want sandbox overriding the origin's", show(csp))
	}
	if _, ok := cfg["CorsConfig"]; ok {
		t.Errorf("MediaResponseHeadersPolicy: has a CorsConfig %s; the outputs answer no CORS", show(cfg["CorsConfig"]))
	}
}

func TestTheHttpApiAuthorizesThrottlesLogsAndAllowsCORS(t *testing.T) {
	tpl := tmpl(t)
	api := resource(t, "HttpApi", "AWS::Serverless::HttpApi").Properties
	if api["StageName"] != "$default" {
		t.Errorf("HttpApi: StageName is %s, want $default (the ApiUrl output has no stage path)", show(api["StageName"]))
	}
	auth, _ := api["Auth"].(map[string]any)
	def, _ := auth["DefaultAuthorizer"].(string)
	authorizers, _ := auth["Authorizers"].(map[string]any)
	a, ok := authorizers[def].(map[string]any)
	if !ok {
		t.Fatalf("HttpApi: Auth.DefaultAuthorizer %q names no authorizer of Auth.Authorizers %s", def, show(authorizers))
	}
	if fn, attr, _ := getAtt(a["FunctionArn"]); fn != "AuthorizerFunction" || attr != "Arn" {
		t.Errorf("HttpApi: authorizer %s's FunctionArn is %s, want !GetAtt AuthorizerFunction.Arn", def, show(a["FunctionArn"]))
	}
	if a["AuthorizerPayloadFormatVersion"] != "2.0" || a["EnableSimpleResponses"] != true {
		t.Errorf("HttpApi: authorizer %s answers %s; the function answers payload 2.0 simple responses ({isAuthorized, context})", def, show(a))
	}
	if a["EnableFunctionDefaultPermissions"] != true && a["FunctionInvokeRole"] == nil {
		t.Errorf("HttpApi: authorizer %s: the API may not invoke it (EnableFunctionDefaultPermissions: true or a FunctionInvokeRole)", def)
	}
	checkAuthorizerIdentity(t, tpl, def, a)
	cors, _ := api["CorsConfiguration"].(map[string]any)
	headers := strings.ToLower(strings.Join(stringsOf(cors["AllowHeaders"]), ","))
	// Prefer: a page may ask for the synchronous answer (Prefer: wait).
	for _, h := range []string{"authorization", "content-type", "idempotency-key", "prefer"} {
		if !strings.Contains(","+headers+",", ","+h+",") {
			t.Errorf("HttpApi: CorsConfiguration.AllowHeaders %v lacks %s", stringsOf(cors["AllowHeaders"]), h)
		}
	}
	// The playground and the dashboard may be served from another origin
	// (docs/cli.md): they call every route, so every route's method is
	// allowed (the dashboard revokes keys with DELETE).
	methods := stringsOf(cors["AllowMethods"])
	want := []string{"OPTIONS"}
	for _, r := range routes {
		want = append(want, r.Method)
	}
	slices.Sort(want)
	for _, m := range slices.Compact(want) {
		if !slices.Contains(methods, m) && !slices.Contains(methods, "*") {
			t.Errorf("HttpApi: CorsConfiguration.AllowMethods %v lacks %s, the method of a route", methods, m)
		}
	}
	if len(stringsOf(cors["AllowOrigins"])) == 0 {
		t.Errorf("HttpApi: CorsConfiguration.AllowOrigins is empty")
	}
	logs, _ := api["AccessLogSettings"].(map[string]any)
	if lg, attr, _ := getAtt(logs["DestinationArn"]); attr != "Arn" || tpl.Resources[lg].Type != "AWS::Logs::LogGroup" {
		t.Errorf("HttpApi: AccessLogSettings.DestinationArn is %s, want !GetAtt <an AWS::Logs::LogGroup>.Arn", show(logs["DestinationArn"]))
	}
	var format map[string]string
	if err := json.Unmarshal([]byte(logs["Format"].(string)), &format); err != nil {
		t.Errorf("HttpApi: AccessLogSettings.Format is not one JSON object: %v", err)
	}
	for field, variable := range map[string]string{"requestId": "$context.requestId", "routeKey": "$context.routeKey",
		"status": "$context.status", "latency": "$context.responseLatency"} {
		if format[field] != variable {
			t.Errorf("HttpApi: the access log's %s is %q, want %q", field, format[field], variable)
		}
	}
	throttle, _ := api["DefaultRouteSettings"].(map[string]any)
	burst, okB := number(throttle["ThrottlingBurstLimit"])
	rate, okR := number(throttle["ThrottlingRateLimit"])
	if !okB || !okR || burst <= 0 || rate <= 0 || burst < rate {
		t.Errorf("HttpApi: DefaultRouteSettings is %s, want positive ThrottlingBurstLimit >= ThrottlingRateLimit", show(throttle))
	}
	text, _, _ := sub(tpl.Outputs["ApiUrl"].(map[string]any)["Value"])
	if text != "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}" {
		t.Errorf("Outputs.ApiUrl is %q, want https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}", text)
	}
}

// samGlobalsFunction are the Function properties SAM accepts in Globals
// (a Policies entry there would fail the transform).
var samGlobalsFunction = []string{
	"Architectures", "AssumeRolePolicyDocument", "AutoPublishAlias", "AutoPublishAliasAllProperties", "CodeUri",
	"DeadLetterQueue", "DeploymentPreference", "Description", "Environment", "EphemeralStorage", "EventInvokeConfig",
	"FileSystemConfigs", "FunctionUrlConfig", "Handler", "KmsKeyArn", "Layers", "LoggingConfig", "MemorySize",
	"PermissionsBoundary", "PropagateTags", "ProvisionedConcurrencyConfig", "RecursiveLoop", "ReservedConcurrentExecutions",
	"RolePath", "Runtime", "RuntimeManagementConfig", "SnapStart", "SourceKMSKeyArn", "Tags", "Timeout", "Tracing", "VpcConfig",
}

func TestEveryFunctionRunsAsTheGoRuntimeExpects(t *testing.T) {
	tpl := tmpl(t)
	g, _ := tpl.Globals["Function"].(map[string]any)
	for k := range g {
		if !slices.Contains(samGlobalsFunction, k) {
			t.Errorf("Globals.Function.%s: SAM does not accept it in Globals", k)
		}
	}
	for _, f := range functions {
		p := resource(t, f.ID, "AWS::Serverless::Function").Properties
		logging, _ := p["LoggingConfig"].(map[string]any)
		for k, want := range map[string]any{"Runtime": "provided.al2023", "Handler": "bootstrap", "Tracing": "Active"} {
			if p[k] != want {
				t.Errorf("%s: %s is %s, want %s", f.ID, k, show(p[k]), show(want))
			}
		}
		if a := stringsOf(p["Architectures"]); !slices.Equal(a, []string{"arm64"}) {
			t.Errorf("%s: Architectures is %v, want [arm64] (the Makefile builds GOARCH=arm64)", f.ID, a)
		}
		if logging["LogFormat"] != "JSON" {
			t.Errorf("%s: LoggingConfig.LogFormat is %s, want JSON (the functions log JSON with slog)", f.ID, show(logging["LogFormat"]))
		}
		timeout, ok := number(p["Timeout"])
		if !ok || timeout < 1 || timeout > 900 {
			t.Errorf("%s: Timeout is %s", f.ID, show(p["Timeout"]))
		}
		if mem, ok := number(p["MemorySize"]); !ok || mem < 128 || mem > 10240 {
			t.Errorf("%s: MemorySize is %s", f.ID, show(p["MemorySize"]))
		}
		if slices.ContainsFunc(routes, func(r struct{ Method, Path, Function string }) bool { return r.Function == f.ID }) && timeout > 29 {
			t.Errorf("%s: Timeout %d s; an HTTP API waits at most 30 s for a route", f.ID, timeout)
		}
	}
	if authTimeout, _ := number(tpl.Resources["AuthorizerFunction"].Properties["Timeout"]); authTimeout > 10 {
		t.Errorf("AuthorizerFunction: Timeout %d s; it runs before every request and must answer fast", authTimeout)
	}

	asm := resource(t, "AssembleFunction", "AWS::Serverless::Function").Properties
	if n, _ := number(asm["Timeout"]); n != 900 {
		t.Errorf("AssembleFunction: Timeout is %s, want 900", show(asm["Timeout"]))
	}
	if n, _ := number(asm["MemorySize"]); n != 3008 {
		t.Errorf("AssembleFunction: MemorySize is %s, want 3008", show(asm["MemorySize"]))
	}
	if eph, _ := asm["EphemeralStorage"].(map[string]any); eph["Size"] != 4096 {
		t.Errorf("AssembleFunction: EphemeralStorage is %s, want {Size: 4096} (clips and narration in /tmp)", show(asm["EphemeralStorage"]))
	}
	layers, _ := asm["Layers"].([]any)
	if len(layers) != 1 || show(layers[0]) != show(map[string]any{"Ref": "FfmpegLayer"}) {
		t.Errorf("AssembleFunction: Layers is %s, want [!Ref FfmpegLayer]", show(asm["Layers"]))
	}
	layer := resource(t, "FfmpegLayer", "AWS::Serverless::LayerVersion")
	mk, _ := os.ReadFile("../Makefile")
	if layer.Metadata["BuildMethod"] != "makefile" || !strings.Contains(string(mk), "\nbuild-FfmpegLayer:") ||
		show(layer.Properties["CompatibleArchitectures"]) != show([]any{"arm64"}) {
		t.Errorf("FfmpegLayer: want an arm64 layer built by the Makefile's build-FfmpegLayer target, got %s", show(layer))
	}
	if layer.Metadata["BuildArchitecture"] != "arm64" {
		t.Errorf("FfmpegLayer: Metadata.BuildArchitecture is %s, want arm64 (sam build builds layers for x86_64 otherwise)", show(layer.Metadata["BuildArchitecture"]))
	}
	for name, r := range tpl.Resources {
		switch {
		case name == "AssembleFunction":
		case name == "LongStoryCreateFunction":
			// Its ffprobe checks a music_url given as a URL or an uploaded file.
			if show(r.Properties["Layers"]) != show([]any{map[string]any{"Ref": "FfmpegLayer"}}) {
				t.Errorf("%s: Layers %s, want [!Ref FfmpegLayer] (ffprobe checks a music_url)", name, show(r.Properties["Layers"]))
			}
		case r.Properties["Layers"] != nil:
			t.Errorf("%s: Layers %s; only the assemble function runs ffmpeg, and the long-form create function ffprobe", name, show(r.Properties["Layers"]))
		}
	}

	sweeper := resource(t, "SweeperFunction", "AWS::Serverless::Function")
	events, _ := sweeper.Properties["Events"].(map[string]any)
	scheduled := false
	for _, e := range events {
		em, _ := e.(map[string]any)
		ep, _ := em["Properties"].(map[string]any)
		if (em["Type"] == "Schedule" || em["Type"] == "ScheduleV2") && (ep["Schedule"] == "rate(5 minutes)" || ep["ScheduleExpression"] == "rate(5 minutes)") {
			scheduled = true
		}
	}
	if !scheduled {
		t.Errorf("SweeperFunction: no Schedule event rate(5 minutes): %s", show(events))
	}
	if n, _ := number(sweeper.Properties["Timeout"]); n >= 300 {
		t.Errorf("SweeperFunction: Timeout %d s; it should end before the next run, five minutes later", n)
	}
}

func TestTheOutputsNameWhatOperatorsNeed(t *testing.T) {
	tpl := tmpl(t)
	want := map[string]any{
		"ApiUrl":                           map[string]any{"Fn::Sub": "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"},
		"MediaBaseUrl":                     map[string]any{"Fn::Sub": "https://${MediaDistribution.DomainName}"},
		"StateMachineArn":                  map[string]any{"Ref": "LongStoryStateMachine"},
		"UpstreamTokenSecretArn":           map[string]any{"Ref": "UpstreamTokenSecret"},
		"PollDeadLetterQueueUrl":           map[string]any{"Ref": "PollDeadLetterQueue"},
		"UpstreamWebhookUrl":               map[string]any{"Fn::Sub": "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/api/upstream/webhook"},
		"WebhookQueueUrl":                  map[string]any{"Ref": "WebhookQueue"},
		"WebhookDeadLetterQueueUrl":        map[string]any{"Ref": "WebhookDeadLetterQueue"},
		"ExecutionEndedDeadLetterQueueUrl": map[string]any{"Ref": "ExecutionEndedDeadLetterQueue"},
		"AlarmTopicArn":                    map[string]any{"Ref": "AlarmTopic"},
		"AccountsTableName":                map[string]any{"Ref": "AccountsTable"},
		"ApiKeysTableName":                 map[string]any{"Ref": "ApiKeysTable"},
		"GenerationsTableName":             map[string]any{"Ref": "GenerationsTable"},
		"LongVideosTableName":              map[string]any{"Ref": "LongVideosTable"},
		"RateLimitsTableName":              map[string]any{"Ref": "RateLimitsTable"},
		"CountersTableName":                map[string]any{"Ref": "CountersTable"},
		"IdempotencyTableName":             map[string]any{"Ref": "IdempotencyTable"},
		"TablePrefix":                      map[string]any{"Ref": "AWS::StackName"},
	}
	for name, w := range want {
		o, ok := tpl.Outputs[name].(map[string]any)
		if !ok {
			t.Errorf("Outputs.%s is missing (want %s)", name, show(w))
			continue
		}
		if show(o["Value"]) != show(w) {
			t.Errorf("Outputs.%s is %s, want %s", name, show(o["Value"]), show(w))
		}
	}
}

// TestSamconfigDeploysTheTemplate reads samconfig.toml's few keys (the
// module has no TOML library; the file is flat key = "value" lines).
func TestSamconfigDeploysTheTemplate(t *testing.T) {
	tpl := tmpl(t)
	raw, err := os.ReadFile("../samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	conf := map[string]map[string]string{"": {}}
	section := ""
	line := regexp.MustCompile(`^([a-z0-9_]+)\s*=\s*(.+)$`)
	for i, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = strings.Trim(l, "[]")
			conf[section] = map[string]string{}
		default:
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("samconfig.toml:%d: %q is not key = value", i+1, l)
			}
			conf[section][m[1]] = strings.Trim(m[2], `"`)
		}
	}
	if conf[""]["version"] != "0.1" {
		t.Errorf("samconfig.toml: version is %q, want 0.1", conf[""]["version"])
	}
	for env, want := range map[string]struct{ stack, stage string }{"default": {"mediagen-dev", "dev"}, "prod": {"mediagen-prod", "prod"}} {
		if got := conf[env+".global.parameters"]["stack_name"]; got != want.stack {
			t.Errorf("samconfig.toml: [%s.global.parameters] stack_name is %q, want %q", env, got, want.stack)
		}
		build := conf[env+".build.parameters"]
		if build["cached"] != "true" || build["parallel"] != "true" {
			t.Errorf("samconfig.toml: [%s.build.parameters] is %v, want cached and parallel true", env, build)
		}
		// Every function's CodeUri is the module root: without it sam build
		// copies the whole repository once per function.
		if build["build_in_source"] != "true" {
			t.Errorf("samconfig.toml: [%s.build.parameters] build_in_source is %q, want true", env, build["build_in_source"])
		}
		deploy := conf[env+".deploy.parameters"]
		if deploy["capabilities"] != "CAPABILITY_IAM" || deploy["confirm_changeset"] != "true" || deploy["resolve_s3"] != "true" {
			t.Errorf("samconfig.toml: [%s.deploy.parameters] is %v, want capabilities CAPABILITY_IAM, confirm_changeset and resolve_s3 true", env, deploy)
		}
		overrides := map[string]string{}
		for _, kv := range strings.Fields(deploy["parameter_overrides"]) {
			k, v, _ := strings.Cut(kv, "=")
			overrides[k] = v
			p, ok := tpl.Parameters[k].(map[string]any)
			if !ok {
				t.Errorf("samconfig.toml: [%s] parameter_overrides sets %s, which is not a parameter of template.yaml", env, k)
				continue
			}
			if allowed := stringsOf(p["AllowedValues"]); allowed != nil && !slices.Contains(allowed, v) {
				t.Errorf("samconfig.toml: [%s] %s=%s is not one of %v", env, k, v, allowed)
			}
			if pattern, ok := p["AllowedPattern"].(string); ok && !regexp.MustCompile(pattern).MatchString(v) {
				t.Errorf("samconfig.toml: [%s] %s=%s does not match its AllowedPattern %s", env, k, v, pattern)
			}
		}
		if overrides["Stage"] != want.stage {
			t.Errorf("samconfig.toml: [%s] deploys Stage=%q, want %s", env, overrides["Stage"], want.stage)
		}
		// prod's alarms reach a person: AlarmEmail subscribes an address
		// (a placeholder the operator replaces, docs/deploy.md).
		if env == "prod" && overrides["AlarmEmail"] == "" {
			t.Errorf("samconfig.toml: [prod] sets no AlarmEmail; prod's alarms would mail no one")
		}
	}
}

// checkAuthorizerIdentity: the authorizer's identity source is the
// Authorization header and nothing else, and its answers are cached for the
// AuthorizerCacheTtl parameter (a number, 0–3600, default
// costs.AuthorizerCacheTTL). The local gateway emulates exactly that
// (apigw.LambdaAuthorizer: cache key the header's value, refused without
// it), and Gate.Authorize answers the same on every route, which a cache
// shared by all routes needs; a second identity source (a query string,
// $context.routeKey) would make the local emulation and the docs wrong.
func checkAuthorizerIdentity(t *testing.T, tpl *Template, def string, a map[string]any) {
	t.Helper()
	identity, _ := a["Identity"].(map[string]any)
	if h := stringsOf(identity["Headers"]); len(h) != 1 || !strings.EqualFold(h[0], "Authorization") {
		t.Errorf("HttpApi: authorizer %s: Identity.Headers %s, want [Authorization] (the identity source and cache key)", def, show(identity["Headers"]))
	}
	for _, k := range []string{"QueryStrings", "StageVariables", "Context"} {
		if v, ok := identity[k]; ok {
			t.Errorf("HttpApi: authorizer %s has identity source %s %s: the cache key must be the Authorization header alone, as the local gateway keys it", def, k, show(v))
		}
	}
	if ref, _ := identity["ReauthorizeEvery"].(map[string]any); len(ref) != 1 || ref["Ref"] != "AuthorizerCacheTtl" {
		t.Errorf("HttpApi: authorizer %s: Identity.ReauthorizeEvery %s, want !Ref AuthorizerCacheTtl", def, show(identity["ReauthorizeEvery"]))
	}
	p, _ := tpl.Parameters["AuthorizerCacheTtl"].(map[string]any)
	def60, _ := number(p["Default"])
	lo, hasLo := number(p["MinValue"])
	hi, hasHi := number(p["MaxValue"])
	if p["Type"] != "Number" || def60 != int(costs.AuthorizerCacheTTL/time.Second) || !hasLo || lo != 0 || !hasHi || hi != 3600 {
		t.Errorf("parameter AuthorizerCacheTtl is %s; want Type Number, Default %d (costs.AuthorizerCacheTTL, what make bench prices), MinValue 0 (no cache), MaxValue 3600 (API Gateway's most)",
			show(p), int(costs.AuthorizerCacheTTL/time.Second))
	}
}

// TestSAMGivesTheAuthorizerItsIdentitySourceAndTTL: as aws-sam-translator
// expands the template, the HTTP API's authorizer has the identity source
// $request.header.Authorization and its result TTL is the parameter.
func TestSAMGivesTheAuthorizerItsIdentitySourceAndTTL(t *testing.T) {
	doc := expanded(t)
	resources, _ := doc["Resources"].(map[string]any)
	api, _ := resources["HttpApi"].(map[string]any)
	props, _ := api["Properties"].(map[string]any)
	body, _ := props["Body"].(map[string]any)
	components, _ := body["components"].(map[string]any)
	schemes, _ := components["securitySchemes"].(map[string]any)
	found := 0
	for name, v := range schemes {
		scheme, _ := v.(map[string]any)
		a, ok := scheme["x-amazon-apigateway-authorizer"].(map[string]any)
		if !ok || a["type"] != "request" {
			continue
		}
		found++
		if src := stringsOf(a["identitySource"]); !slices.Equal(src, []string{"$request.header.Authorization"}) {
			t.Errorf("expanded HttpApi: authorizer %s: identitySource %s, want [$request.header.Authorization]", name, show(a["identitySource"]))
		}
		if ref, _ := a["authorizerResultTtlInSeconds"].(map[string]any); len(ref) != 1 || ref["Ref"] != "AuthorizerCacheTtl" {
			t.Errorf("expanded HttpApi: authorizer %s: authorizerResultTtlInSeconds %s, want {Ref: AuthorizerCacheTtl}", name, show(a["authorizerResultTtlInSeconds"]))
		}
	}
	if found != 1 {
		t.Errorf("expanded HttpApi: %d Lambda authorizers in the body's securitySchemes, want 1: %s", found, show(schemes))
	}
}

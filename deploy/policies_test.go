package deploy

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Permissions are checked on logical resources. A target is written
// "<kind>:<LogicalId>[/<path>]":
//
//	table:AccountsTable          index:GenerationsTable/user-id-index
//	queue:PollQueue              object:OutputBucket/<key>    bucket:OutputBucket
//	secret:UpstreamTokenSecret   statemachine:LongStoryStateMachine
//	execution:LongStoryStateMachine/<execution name>
//	function:NarrateFunction     loggroup:WorkflowLogs        *  (every resource)
//
// Grants use the same form with IAM's wildcards (* and ?).

// Object keys the code writes and reads (internal/core/media/keys.go for the
// published ones, internal/core/longform/{scenes,narrate}.go for the scratch); keyLayouts
// checks that the code still builds them so.
const (
	generationKey = "generations/3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7/0.png"
	sceneKey      = "long-videos/6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43/scenes/001.mp4"
	narrationKey  = "long-videos/6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43/narration/001-3b9e0f4c72a1d586.mp3"
	finalKey      = "long-videos/6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43/final.mp4"
	captionsKey   = "long-videos/6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43/captions.vtt"
	inputKey      = "inputs/3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7/input.json"
	// previewKey is a voice's preview clip: spoken once and kept, under
	// no expiring prefix (so not in objectKeys).
	previewKey = "voices/en/matthew/preview.mp3"
	// uploadKey is a file a client uploaded (media.UploadKey).
	uploadKey = "uploads/usr_11c0d8c2-f282-419c-b7e3-cacf54edc28f/019ad6f0-3c2e-7a41-9b6d-2f8e4c1a7b30"
	// snapshotKey is the copy of an uploaded file that one generation or
	// long video reads (media.SnapshotKey).
	snapshotKey = "inputs/3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7/files/019ad6f0-3c2e-7a41-9b6d-2f8e4c1a7b30"
)

var objectKeys = []string{generationKey, sceneKey, narrationKey, finalKey, captionsKey, inputKey, uploadKey, snapshotKey}

// execution is an execution of the long-form workflow: it is named after
// its video (workflow.StepFunctions.ExecutionARN).
const execution = "execution:LongStoryStateMachine/6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43"

var keyLayouts = []struct{ file, layout string }{
	{"../internal/core/media/keys.go", `"generations/%s/%d"`},
	{"../internal/core/longform/scenes.go", `"long-videos/%s/scenes/%03d"`},
	{"../internal/core/longform/narrate.go", `"long-videos/" + videoID + "/narration/"`},
	{"../internal/core/longform/narrate.go", `"%s%03d-%x", narrationPrefix(videoID)`},
	{"../internal/core/media/keys.go", `"long-videos/" + videoID + "/final.mp4"`},
	{"../internal/core/media/keys.go", `"long-videos/" + videoID + "/captions.vtt"`},
	{"../internal/core/media/outputs.go", `"generations/" + generationUUID + "/"`},
	{"../internal/core/media/outputs.go", `"long-videos/" + videoID + "/"`},
	{"../internal/core/media/keys.go", `InputsPrefix = "inputs/"`},
	{"../internal/core/media/keys.go", `InputsPrefix + generationUUID + "/input.json"`},
	{"../internal/core/longform/previews.go", `"voices/" + code + "/"`},
	{"../internal/core/media/uploads.go", `UploadsPrefix = "uploads/"`},
	{"../internal/core/media/uploads.go", `UploadsPrefix + userID + "/" + fileID`},
	{"../internal/core/media/uploads.go", `InputsPrefix + workID + "/files/" + fileID`},
	{"../internal/core/longform/previews.go", `previewPrefix(v.Language) + v.ID + "/preview"`},
}

// A use is a call the code makes: its actions on one target, and where.
type use struct {
	target  string
	actions []string
	why     string
	// byToken: the call names its resource by a task token, not by a
	// variable the function reads.
	byToken bool
}

func uses(target, why string, actions ...string) use {
	return use{target: target, actions: actions, why: why}
}

// byToken marks a call whose resource the task token names.
func byToken(u use) use { u.byToken = true; return u }

// notify enqueues the webhook event of a record that became final
// (webhook.Notifier).
var notify = uses("queue:WebhookQueue", "Notifier: the webhook event of a final record", "sqs:SendMessage")

var invalidate = uses("distribution:MediaDistribution", "media.RemoveFiles: the deleted files leave the CDN's caches", "cloudfront:CreateInvalidation")

var upstreamToken = uses("secret:UpstreamTokenSecret", "the upstreams' tokens", "secretsmanager:GetSecretValue")

// sqsPolling is what an SQS event source mapping needs of its function's
// execution role on the queue (Lambda's "Execution role permissions" for
// SQS).
var sqsPolling = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}

var putObject = []string{"s3:PutObject", "s3:AbortMultipartUpload"} // the upload manager aborts a failed multipart upload

// usesOf is every call each function makes on a resource other than a
// DynamoDB table, read from its use cases. Its DynamoDB calls are derived
// from its code (dynamoUses). The policies must cover them all and grant
// nothing beyond their resources.
var usesOf = map[string][]use{
	"AuthorizerFunction": nil,
	"GenerateFunction": {
		uses("queue:PollQueue", "the first poll", "sqs:SendMessage"),
		upstreamToken,
		uses("object:OutputBucket/"+inputKey, "an input too large for its record", putObject...),
		uses("bucket:OutputBucket", "finds an uploaded file named in an image field by listing its key (under uploads/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+uploadKey, "copies an uploaded file named in an image field (CopyObject reads the source)", "s3:GetObject"),
		uses("object:OutputBucket/"+snapshotKey, "the generation's copy of the file (CopyObject writes it)", "s3:PutObject"),
		uses("object:OutputBucket/"+snapshotKey, "measures the copy, reads its first bytes and presigns its GET for the provider", "s3:GetObject"),
	},
	"FileCreateFunction": {
		uses("object:OutputBucket/"+uploadKey, "presigns a file's PUT: the client's upload runs under this role", "s3:PutObject"),
	},
	"StatusFunction":             nil,
	"GenerationsListFunction":    nil,
	"GenerationEstimateFunction": nil, // the catalog and the price file
	"GenerationCancelFunction": {
		notify,
		upstreamToken, // cancels the job upstream
	},
	"PollerFunction": {
		uses("queue:PollQueue", "the next poll", "sqs:SendMessage"),
		uses("queue:PollQueue", "PollerFunctionPolls polls the queue with the execution role", sqsPolling...),
		notify,
		uses("object:OutputBucket/"+generationKey, "the generation's outputs", putObject...),
		uses("object:OutputBucket/"+sceneKey, "the scenes' clips", putObject...),
		uses("object:OutputBucket/"+sceneKey, "deletes a clip copied after its video ended", "s3:DeleteObject"),
		uses("bucket:OutputBucket", "lists a generation's outputs to tag (under generations/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+generationKey, "tags the outputs with a shorter retention", "s3:PutObjectTagging"),
		uses("object:OutputBucket/"+generationKey, "deletes the outputs of a generation that failed while finishing, or a late copy's", "s3:DeleteObject"),
		uses("object:OutputBucket/"+inputKey, "the whole input of a generation that waited for a slot", "s3:GetObject"),
		uses("object:OutputBucket/"+snapshotKey, "presigns the GET of the file copies a generation that waited for a slot made at its create", "s3:GetObject"),
		uses("bucket:OutputBucket", "finds a waiting generation's copy of a file by listing its key (under inputs/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+uploadKey, "reads and presigns the upload of a generation created before the copies (none under inputs/)", "s3:GetObject"),
		byToken(uses("statemachine:LongStoryStateMachine", "resumes the scenes' tasks",
			"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat")),
		upstreamToken,
	},
	"UpstreamWebhookFunction": { // no Gate: the provider's signature proves the call
		uses("queue:PollQueue", "the job's report, for the poller", "sqs:SendMessage"),
		upstreamToken, // the provider's signing secret is read with its token
	},
	"WebhooksFunction": {
		uses("queue:WebhookQueue", "the next attempt, delayed by the backoff", "sqs:SendMessage"),
		uses("queue:WebhookQueue", "WebhooksFunctionDeliveries polls the queue with the execution role", sqsPolling...),
	},
	"SweeperFunction":                    {notify}, // the final event of the work whose hold it settles
	"AccountFunction":                    nil,
	"AccountTransactionsFunction":        nil,
	"AccountUsageFunction":               nil,
	"AccountKeyCreateFunction":           nil,
	"AccountKeysListFunction":            nil,
	"AccountKeyRevokeFunction":           nil,
	"AccountWebhookSecretRotateFunction": nil,
	"LongStoryEstimateFunction":          nil,
	"LongStoryCreateFunction": {
		uses("statemachine:LongStoryStateMachine", "StartExecution", "states:StartExecution"),
		uses("bucket:OutputBucket", "finds the uploaded file named in music_url by listing its key (under uploads/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+uploadKey, "copies the uploaded file named in music_url (CopyObject reads the source)", "s3:GetObject"),
		uses("object:OutputBucket/"+snapshotKey, "the video's copy of the file (CopyObject writes it)", "s3:PutObject"),
		uses("object:OutputBucket/"+snapshotKey, "measures the copy and reads it whole to probe it as audio", "s3:GetObject"),
	},
	"LongStoryStatusFunction": nil,
	"LongStoryListFunction":   nil,
	// The only functions that delete objects: each lists its record's
	// prefix and deletes what it finds (media.RemoveFiles).
	"GenerationOutputDeleteFunction": {
		uses("bucket:OutputBucket", "lists the generation's objects (under generations/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+generationKey, "deletes the generation's outputs", "s3:DeleteObject"),
		invalidate,
	},
	"LongStoryOutputDeleteFunction": {
		uses("bucket:OutputBucket", "lists the video's objects (under long-videos/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+finalKey, "deletes the final video", "s3:DeleteObject"),
		uses("object:OutputBucket/"+captionsKey, "deletes the captions", "s3:DeleteObject"),
		uses("object:OutputBucket/"+sceneKey, "deletes the scenes' clips", "s3:DeleteObject"),
		uses("object:OutputBucket/"+narrationKey, "deletes the narration", "s3:DeleteObject"),
		invalidate,
	},
	"LongStoryRegenerateFunction": {
		uses("statemachine:LongStoryStateMachine", "StartExecution of <video>-r<revision>", "states:StartExecution"),
	},
	"LongStoryCancelFunction": {
		uses(execution, "Workflow.Stop", "states:StopExecution"),
		notify,
		upstreamToken, // cancels the scenes' jobs upstream
	},
	"LongStoryVoicesFunction": {
		uses("bucket:OutputBucket", "lists the preview clips already spoken (under voices/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+previewKey, "a voice's preview clip, spoken at its first list", putObject...),
		uses("*", "Amazon Polly speaks the preview clips", "polly:SynthesizeSpeech"),
	},
	"ModelsFunction":  nil, // the catalog and the price file only
	"OpenApiFunction": nil, // the embedded description only
	"SubmitSceneFunction": {
		upstreamToken,
		uses("queue:PollQueue", "the scene job's first poll", "sqs:SendMessage"),
	},
	"NarrateFunction": {
		uses("bucket:OutputBucket", "lists the tracks already spoken (under long-videos/*/narration/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+narrationKey, "the narration tracks", putObject...),
		uses("*", "Amazon Polly", "polly:SynthesizeSpeech"),
	},
	"AssembleFunction": {
		uses("object:OutputBucket/"+sceneKey, "the clips", "s3:GetObject"),
		uses("object:OutputBucket/"+narrationKey, "the narration", "s3:GetObject"),
		uses("object:OutputBucket/"+snapshotKey, "the copy of the uploaded file music_url names, made at create", "s3:GetObject"),
		uses("bucket:OutputBucket", "finds the video's copy of its music by listing its key (under inputs/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+uploadKey, "the uploaded music of a video created before the copies (none under inputs/)", "s3:GetObject"),
		uses("object:OutputBucket/"+finalKey, "the final video", putObject...),
		uses("object:OutputBucket/"+finalKey, "deletes its upload when the video ended meanwhile", "s3:DeleteObject"),
		uses("object:OutputBucket/"+captionsKey, "the captions", putObject...),
		uses("object:OutputBucket/"+captionsKey, "deletes its captions when the video ended meanwhile", "s3:DeleteObject"),
	},
	"FinalizeFunction": {
		notify,
		uses("bucket:OutputBucket", "lists the video's objects to tag (under long-videos/)", "s3:ListBucket"),
		uses("object:OutputBucket/"+finalKey, "tags the final video with a shorter retention", "s3:PutObjectTagging"),
		uses("object:OutputBucket/"+captionsKey, "tags the captions", "s3:PutObjectTagging"),
		uses("object:OutputBucket/"+sceneKey, "tags the clips", "s3:PutObjectTagging"),
		uses("object:OutputBucket/"+narrationKey, "tags the narration", "s3:PutObjectTagging"),
		uses("object:OutputBucket/"+finalKey, "deletes the final video a regenerate replaced, or stored after it ended", "s3:DeleteObject"),
		uses("object:OutputBucket/"+captionsKey, "deletes the captions a regenerate replaced, or stored after it ended", "s3:DeleteObject"),
		uses("object:OutputBucket/"+sceneKey, "deletes the scene's clip a regenerate replaced, or made after it ended", "s3:DeleteObject"),
		uses("distribution:MediaDistribution", "media.UncachingDeleter: the final video and captions a regenerate replaced leave the CDN's caches", "cloudfront:CreateInvalidation"),
	},
	"MarkFailedFunction": {
		notify,
		uses("object:OutputBucket/"+finalKey, "deletes the final video of a video that failed while finishing", "s3:DeleteObject"),
		uses("object:OutputBucket/"+captionsKey, "deletes the captions of a video that failed while finishing", "s3:DeleteObject"),
		upstreamToken, // cancels the scenes' jobs upstream
	},
	"LongStoryStateMachine": {
		uses("function:SubmitSceneFunction", "task SubmitScene", "lambda:InvokeFunction"),
		uses("function:NarrateFunction", "task Narrate", "lambda:InvokeFunction"),
		uses("function:AssembleFunction", "task Assemble", "lambda:InvokeFunction"),
		uses("function:FinalizeFunction", "task Finalize", "lambda:InvokeFunction"),
		uses("function:MarkFailedFunction", "task MarkFailed", "lambda:InvokeFunction"),
		uses("*", "logging to CloudWatch Logs", logDelivery...),
	},
}

var logDelivery = []string{
	"logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
	"logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
}

// onEveryResource are the only actions granted on "*", who holds each,
// and why there is no narrower resource.
var onEveryResource = map[string]struct {
	holders []string
	why     string
}{
	// The narration and the voices' preview clips.
	"polly:SynthesizeSpeech": {[]string{"NarrateFunction", "LongStoryVoicesFunction"}, "Polly has no resource-level permission for SynthesizeSpeech without lexicons"},
}

func init() {
	for _, a := range logDelivery {
		onEveryResource[a] = struct {
			holders []string
			why     string
		}{[]string{"LongStoryStateMachine"}, "CloudWatch Logs' log-delivery actions have no resource-level permissions"}
	}
}

// resourceVariable is the variable through which a function learns each
// resource it calls.
var resourceVariable = map[string]string{
	"table:AccountsTable": "ACCOUNTS_TABLE", "table:ApiKeysTable": "API_KEYS_TABLE",
	"table:GenerationsTable": "GENERATIONS_TABLE", "table:LongVideosTable": "LONG_VIDEOS_TABLE",
	"table:RateLimitsTable": "RATE_LIMITS_TABLE", "table:CountersTable": "COUNTERS_TABLE",
	"table:IdempotencyTable": "IDEMPOTENCY_TABLE",
	"queue:PollQueue":        "POLL_QUEUE_URL", "bucket:OutputBucket": "OUTPUT_BUCKET",
	"queue:WebhookQueue":         "WEBHOOK_QUEUE_URL",
	"secret:UpstreamTokenSecret": "UPSTREAM_TOKENS_SECRET_ARN", "statemachine:LongStoryStateMachine": "STATE_MACHINE_ARN",
	"distribution:MediaDistribution": "MEDIA_DISTRIBUTION_ID",
}

// namesOnly: a resource variable a function reads without calling the
// resource, and why.
var namesOnly = map[string]map[string]string{}

// samPolicyTemplates are the SAM policy templates the test can expand
// (samtranslator/policy_templates_data/policy_templates.json): the
// parameter, the form it must take, and what the template grants.
var samPolicyTemplates = map[string]struct {
	param   string
	actions []string
	targets func(x string) []string
}{
	"DynamoDBCrudPolicy": {"TableName", []string{"dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Scan",
		"dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "dynamodb:DescribeTable",
		"dynamodb:ConditionCheckItem"}, tableAndIndexes},
	"DynamoDBReadPolicy": {"TableName", []string{"dynamodb:GetItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchGetItem",
		"dynamodb:DescribeTable"}, tableAndIndexes},
	"DynamoDBWritePolicy":  {"TableName", []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"}, tableAndIndexes},
	"SQSSendMessagePolicy": {"QueueName", []string{"sqs:SendMessage*"}, one("queue")},
	"SQSPollerPolicy": {"QueueName", []string{"sqs:ChangeMessageVisibility", "sqs:ChangeMessageVisibilityBatch", "sqs:DeleteMessage",
		"sqs:DeleteMessageBatch", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}, one("queue")},
	"S3ReadPolicy": {"BucketName", []string{"s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation", "s3:GetObjectVersion",
		"s3:GetLifecycleConfiguration"}, bucketAndObjects},
	"S3WritePolicy": {"BucketName", []string{"s3:PutObject", "s3:PutObjectAcl", "s3:PutLifecycleConfiguration"}, bucketAndObjects},
	"S3CrudPolicy": {"BucketName", []string{"s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation", "s3:GetObjectVersion",
		"s3:PutObject", "s3:PutObjectAcl", "s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration", "s3:DeleteObject"}, bucketAndObjects},
	"StepFunctionsExecutionPolicy":          {"StateMachineName", []string{"states:StartExecution"}, one("statemachine")},
	"AWSSecretsManagerGetSecretValuePolicy": {"SecretArn", []string{"secretsmanager:GetSecretValue"}, one("secret")},
	"LambdaInvokePolicy":                    {"FunctionName", []string{"lambda:InvokeFunction"}, func(x string) []string { return []string{"function:" + x + "*"} }},
}

func tableAndIndexes(x string) []string  { return []string{"table:" + x, "index:" + x + "/*"} }
func bucketAndObjects(x string) []string { return []string{"bucket:" + x, "object:" + x + "/*"} }
func one(kind string) func(string) []string {
	return func(x string) []string { return []string{kind + ":" + x} }
}

// templateParameter says which form each policy template parameter takes.
var templateParameter = map[string]struct {
	typ, attr, hint string // attr "": !Ref
}{
	"TableName":        {"AWS::DynamoDB::Table", "", "!Ref <table> (its name)"},
	"QueueName":        {"AWS::SQS::Queue", "QueueName", "!GetAtt <queue>.QueueName (Ref of a queue is its URL)"},
	"BucketName":       {"AWS::S3::Bucket", "", "!Ref <bucket> (its name)"},
	"StateMachineName": {"AWS::Serverless::StateMachine", "Name", "!GetAtt <state machine>.Name (Ref of a state machine is its ARN)"},
	"SecretArn":        {"AWS::SecretsManager::Secret", "", "!Ref <secret> (its ARN)"},
	"FunctionName":     {"AWS::Serverless::Function", "", "!Ref <function> (its name)"},
}

// A grant is one statement's (or policy template's) actions on its targets.
type grant struct {
	where     string
	actions   []string
	resources []string
}

// principal is a function or state machine with its expanded grants.
type principal struct {
	name     string
	grants   []grant
	problems []string // policies the test cannot read, which is itself an error
}

var kindOfType = map[string]string{
	"AWS::DynamoDB::Table": "table", "AWS::SQS::Queue": "queue", "AWS::S3::Bucket": "bucket",
	"AWS::Serverless::Function": "function", "AWS::Serverless::StateMachine": "statemachine",
	"AWS::Logs::LogGroup": "loggroup", "AWS::SecretsManager::Secret": "secret",
}

// statementTarget reads one Resource of an inline statement.
func statementTarget(tpl *Template, v any) (string, error) {
	if v == "*" {
		return "*", nil
	}
	if x, ok := ref(v); ok {
		switch tpl.Resources[x].Type {
		case "AWS::SecretsManager::Secret":
			return "secret:" + x, nil
		case "AWS::Serverless::StateMachine":
			return "statemachine:" + x, nil
		}
		return "", fmt.Errorf("!Ref %s is not an ARN (write !GetAtt %s.Arn)", x, x)
	}
	if x, attr, ok := getAtt(v); ok && attr == "Arn" {
		if kind, ok := kindOfType[tpl.Resources[x].Type]; ok {
			return kind + ":" + x, nil
		}
	}
	if text, vars, ok := sub(v); ok && vars == nil {
		if m := distributionARN.FindStringSubmatch(text); m != nil && tpl.Resources[m[1]].Type == "AWS::CloudFront::Distribution" {
			return "distribution:" + m[1], nil
		}
		if m := executionARN.FindStringSubmatch(text); m != nil && tpl.Resources[m[1]].Type == "AWS::Serverless::StateMachine" {
			return "execution:" + m[1] + "/" + m[2], nil
		}
		if m := regexp.MustCompile(`^\$\{([A-Za-z0-9]+)\.Arn\}/(.+)$`).FindStringSubmatch(text); m != nil {
			switch tpl.Resources[m[1]].Type {
			case "AWS::S3::Bucket":
				return "object:" + m[1] + "/" + m[2], nil
			case "AWS::DynamoDB::Table":
				if idx, ok := strings.CutPrefix(m[2], "index/"); ok {
					return "index:" + m[1] + "/" + idx, nil
				}
			}
		}
	}
	return "", fmt.Errorf("cannot tell which resource %s names: write !GetAtt X.Arn, !Ref <secret or state machine>, !Sub ${Bucket.Arn}/<prefix>*, !Sub ${Table.Arn}/index/<name>, !Sub arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:${StateMachine.Name}:<name>, or \"*\"", show(v))
}

// distributionARN is a CloudFront distribution of the template (Ref is its
// id; CloudFront is global: no region).
var distributionARN = regexp.MustCompile(`^arn:\$\{AWS::Partition\}:cloudfront::\$\{AWS::AccountId\}:distribution/\$\{([A-Za-z0-9]+)\}$`)

// executionARN is an execution of a state machine of the template: Step
// Functions names it arn:...:execution:<state machine name>:<execution name>.
var executionARN = regexp.MustCompile(`^arn:\$\{AWS::Partition\}:states:\$\{AWS::Region\}:\$\{AWS::AccountId\}:execution:\$\{([A-Za-z0-9]+)\.Name\}:(.+)$`)

func stringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case string:
		return []string{x}, true
	case []any:
		var out []string
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// expand reads a resource's Policies into grants.
func expand(tpl *Template, name string) *principal {
	p := &principal{name: name}
	r := tpl.Resources[name]
	if role, ok := r.Properties["Role"]; ok {
		p.problems = append(p.problems, fmt.Sprintf("%s: Role %s replaces the execution role SAM builds from Policies, which this test checks", name, show(role)))
	}
	var policies []any
	switch v := r.Properties["Policies"].(type) {
	case []any:
		policies = v
	case nil:
	default:
		policies = []any{v}
	}
	for i, pol := range policies {
		where := fmt.Sprintf("%s.Policies[%d]", name, i)
		pm, ok := pol.(map[string]any)
		if !ok {
			p.problems = append(p.problems, fmt.Sprintf("%s: managed policy %s: its permissions cannot be checked here and are not least privilege; name the actions and resources (a policy template or a Statement)", where, show(pol)))
			continue
		}
		if stmts, ok := pm["Statement"]; ok {
			list, _ := stmts.([]any)
			if m, ok := stmts.(map[string]any); ok {
				list = []any{m}
			}
			for j, s := range list {
				sw := fmt.Sprintf("%s.Statement[%d]", where, j)
				sm, _ := s.(map[string]any)
				for _, bad := range []string{"NotAction", "NotResource", "Principal"} {
					if _, ok := sm[bad]; ok {
						p.problems = append(p.problems, fmt.Sprintf("%s: %s in an identity policy", sw, bad))
					}
				}
				if sm["Effect"] != "Allow" {
					p.problems = append(p.problems, fmt.Sprintf("%s: Effect %s; the execution role's policies only allow", sw, show(sm["Effect"])))
					continue
				}
				actions, ok := stringList(sm["Action"])
				if !ok || len(actions) == 0 {
					p.problems = append(p.problems, fmt.Sprintf("%s: Action %s is not a string or a list of strings", sw, show(sm["Action"])))
					continue
				}
				res := sm["Resource"]
				rlist, isList := res.([]any)
				if !isList {
					rlist = []any{res}
				}
				g := grant{where: sw, actions: actions}
				for _, rv := range rlist {
					target, err := statementTarget(tpl, rv)
					if err != nil {
						p.problems = append(p.problems, fmt.Sprintf("%s: %v", sw, err))
						continue
					}
					g.resources = append(g.resources, target)
				}
				p.grants = append(p.grants, g)
			}
			continue
		}
		if len(pm) != 1 {
			p.problems = append(p.problems, fmt.Sprintf("%s: %s is neither a policy template nor a policy document", where, show(pm)))
			continue
		}
		for tname, arg := range pm {
			tdef, ok := samPolicyTemplates[tname]
			if !ok {
				p.problems = append(p.problems, fmt.Sprintf("%s: SAM policy template %s is not one the test can expand; add its actions to samPolicyTemplates", where, tname))
				continue
			}
			args, _ := arg.(map[string]any)
			form := templateParameter[tdef.param]
			val := args[tdef.param]
			var x string
			if form.attr == "" {
				x, _ = ref(val)
			} else if res, attr, ok := getAtt(val); ok && attr == form.attr {
				x = res
			}
			if x == "" || tpl.Resources[x].Type != form.typ || len(args) != 1 {
				p.problems = append(p.problems, fmt.Sprintf("%s: %s's %s is %s, want %s", where, tname, tdef.param, show(args), form.hint))
				continue
			}
			p.grants = append(p.grants, grant{where: where + " (" + tname + ")", actions: tdef.actions, resources: tdef.targets(x)})
		}
	}
	return p
}

// glob matches an IAM pattern (* any run, ? one character).
func glob(pattern, s string, fold bool) bool {
	re := "^" + strings.ReplaceAll(strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*"), `\?`, ".") + "$"
	if fold {
		re = "(?i)" + re
	}
	return regexp.MustCompile(re).MatchString(s)
}

func (g grant) allows(action, target string) bool {
	okAction := slices.ContainsFunc(g.actions, func(a string) bool { return glob(a, action, true) })
	okTarget := slices.ContainsFunc(g.resources, func(r string) bool { return glob(r, target, false) })
	return okAction && okTarget
}

// Actions a function never needs on resources the template owns: their
// configuration belongs to CloudFormation.
var configActions = []string{
	"s3:PutLifecycleConfiguration", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy", "s3:DeleteBucket", "s3:PutBucketAcl",
	"s3:PutObjectAcl", "s3:PutObjectVersionAcl", "s3:PutBucketPublicAccessBlock", "s3:PutEncryptionConfiguration",
	"s3:PutBucketOwnershipControls", "dynamodb:CreateTable", "dynamodb:DeleteTable", "dynamodb:UpdateTable",
	"dynamodb:UpdateTimeToLive", "dynamodb:UpdateContinuousBackups", "dynamodb:RestoreTableToPointInTime",
	"sqs:CreateQueue", "sqs:DeleteQueue", "sqs:PurgeQueue", "sqs:SetQueueAttributes", "sqs:AddPermission",
	"secretsmanager:PutSecretValue", "secretsmanager:UpdateSecret", "secretsmanager:DeleteSecret",
	"secretsmanager:PutResourcePolicy", "secretsmanager:RotateSecret", "states:CreateStateMachine",
	"states:UpdateStateMachine", "states:DeleteStateMachine", "lambda:UpdateFunctionCode",
	"lambda:UpdateFunctionConfiguration", "lambda:AddPermission", "lambda:DeleteFunction", "iam:PassRole",
}

var writeAction = regexp.MustCompile(`(?i)^(dynamodb:(Put|Update|Delete|BatchWrite|PartiQL(Insert|Update|Delete))|s3:(Put|Delete|Abort|Restore|Replicate)|sqs:(Send|Delete|Purge|Change|Set|Create)|states:(Start|Stop|Send|Redrive)|lambda:(Invoke|Update|Delete|Put|Create|Add|Remove)|secretsmanager:(Put|Update|Delete|Create|Restore|Rotate))`)

var sampleWrites = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
	"s3:PutObject", "s3:DeleteObject", "sqs:SendMessage", "sqs:DeleteMessage", "states:StartExecution",
	"lambda:InvokeFunction", "secretsmanager:PutSecretValue"}

// isWrite: the action (or action pattern) can change data.
func isWrite(action string) bool {
	return writeAction.MatchString(action) || slices.ContainsFunc(sampleWrites, func(w string) bool { return glob(action, w, true) })
}

// base is the resource a target belongs to: an index is its table's, an
// object its bucket's.
func base(target string) string {
	kind, rest, _ := strings.Cut(target, ":")
	name, _, _ := strings.Cut(rest, "/")
	switch kind {
	case "index":
		kind = "table"
	case "object":
		kind = "bucket"
	case "execution":
		kind = "statemachine"
	}
	return kind + ":" + strings.TrimSuffix(name, "*")
}

func principals(t *testing.T) []*principal {
	t.Helper()
	var out []*principal
	for _, f := range functions {
		resource(t, f.ID, "AWS::Serverless::Function")
		out = append(out, expand(tmpl(t), f.ID))
	}
	resource(t, "LongStoryStateMachine", "AWS::Serverless::StateMachine")
	return append(out, expand(tmpl(t), "LongStoryStateMachine"))
}

func TestEveryFunctionsPoliciesCoverWhatItTouches(t *testing.T) {
	for _, p := range principals(t) {
		for _, u := range allUses(t)[p.name] {
			for _, a := range u.actions {
				if !slices.ContainsFunc(p.grants, func(g grant) bool { return g.allows(a, u.target) }) {
					t.Errorf("%s calls %s on %s (%s), but no policy of its Policies allows it", p.name, a, u.target, u.why)
				}
			}
		}
	}

	// What a function touches follows from what it reads: the variables
	// that name a resource (lambdawiring.ReadsEnvironment) and the calls above
	// must agree, or the table above is stale.
	varResource := map[string]string{}
	for res, v := range resourceVariable {
		varResource[v] = res
	}
	for _, f := range functions {
		read := reads(t, f.Folder)
		touched := map[string]bool{}
		for _, u := range allUses(t)[f.ID] {
			if u.target == "*" {
				continue
			}
			b := base(u.target)
			touched[b] = true
			if v, ok := resourceVariable[b]; ok && !slices.Contains(read, v) && !u.byToken {
				t.Errorf("%s: usesOf says it calls %s (%s), but it does not read %s, which names that resource; update usesOf", f.ID, u.target, u.why, v)
			}
		}
		readsTable := false
		for _, v := range read {
			res, ok := varResource[v]
			if !ok {
				continue
			}
			if strings.HasPrefix(res, "table:") {
				readsTable = true
				continue // the store reads every table name; usesOf says which it calls
			}
			if why, ok := namesOnly[f.ID][v]; ok {
				if touched[res] {
					t.Errorf("%s: namesOnly says it reads %s only for a name, but usesOf has calls on %s", f.ID, v, res)
				}
				t.Logf("%s reads %s without a policy: %s", f.ID, v, why)
				continue
			}
			if !touched[res] {
				t.Errorf("%s reads %s, so it touches %s, but usesOf lists no call on it and its policies need not cover it; add its calls to usesOf (or to namesOnly, with the reason)", f.ID, v, res)
			}
		}
		hasTable := slices.ContainsFunc(sortedKeys(touched), func(r string) bool { return strings.HasPrefix(r, "table:") })
		if readsTable != hasTable {
			t.Errorf("%s: reads table names %v, calls tables %v: a function with a store calls some table, and one without none", f.ID, readsTable, hasTable)
		}
	}
	for _, k := range keyLayouts {
		src, err := os.ReadFile(k.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), k.layout) {
			t.Errorf("%s no longer builds object keys as %s: update objectKeys, usesOf and the bucket grants of template.yaml", k.file, k.layout)
		}
	}
}

func TestPoliciesGrantNothingElse(t *testing.T) {
	for _, p := range principals(t) {
		for _, problem := range p.problems {
			t.Error(problem)
		}
		used := allUses(t)[p.name]
		usesTarget := func(pattern string, write bool) bool {
			return slices.ContainsFunc(used, func(u use) bool {
				if !glob(pattern, u.target, false) && !(strings.HasPrefix(pattern, "index:") && base(pattern) == base(u.target)) &&
					!(strings.HasPrefix(pattern, "bucket:") && base(pattern) == base(u.target)) {
					return false
				}
				return !write || slices.ContainsFunc(u.actions, isWrite)
			})
		}
		for _, g := range p.grants {
			for _, c := range configActions {
				if slices.ContainsFunc(g.actions, func(a string) bool { return glob(a, c, true) }) {
					t.Errorf("%s: grants %s, which changes a resource the template owns (its configuration belongs to CloudFormation)", g.where, c)
				}
			}
			var writes []string
			for _, a := range g.actions {
				if isWrite(a) {
					writes = append(writes, a)
				}
			}
			for _, r := range g.resources {
				if r == "*" {
					continue // TestNoDataPlaneActionOnEveryResource
				}
				if !usesTarget(r, false) {
					t.Errorf("%s: grants %v on %s, which %s never touches", g.where, g.actions, r, p.name)
					continue
				}
				if len(writes) > 0 && !usesTarget(r, true) {
					t.Errorf("%s: grants %v on %s, which %s only reads; grant it read actions only (e.g. DynamoDBReadPolicy)", g.where, writes, r, p.name)
				}
				if strings.HasPrefix(r, "object:") {
					for _, key := range objectKeys {
						target := "object:OutputBucket/" + key
						if glob(r, target, false) && !slices.ContainsFunc(used, func(u use) bool { return u.target == target }) {
							t.Errorf("%s: %s also covers %s, which %s never reads or writes; scope it to the prefix the function uses", g.where, r, key, p.name)
						}
					}
				}
			}
		}
	}
}

func TestNoDataPlaneActionOnEveryResource(t *testing.T) {
	dataPlane := regexp.MustCompile(`(?i)^(dynamodb:|sqs:|s3:|states:StartExecution|secretsmanager:GetSecretValue|lambda:InvokeFunction|\*)`)
	names := []string{}
	for name, r := range tmpl(t).Resources {
		if _, ok := r.Properties["Policies"]; ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, p := range principals(t) {
		names = slices.DeleteFunc(names, func(n string) bool { return n == p.name })
		for _, g := range p.grants {
			if !slices.Contains(g.resources, "*") {
				continue
			}
			reasons := map[string]bool{}
			for _, a := range g.actions {
				allowed, ok := onEveryResource[a]
				switch {
				case ok && slices.Contains(allowed.holders, p.name):
					reasons[allowed.why] = true
				case ok:
					t.Errorf("%s: %s on every resource (\"*\"): only %v need it (%s)", g.where, a, allowed.holders, allowed.why)
				case dataPlane.MatchString(a):
					t.Errorf("%s: data-plane action %s on every resource (\"*\"); name the table, queue, bucket prefix, state machine, secret or function", g.where, a)
				default:
					t.Errorf("%s: %s on every resource (\"*\"); only actions without resource-level permissions may be (onEveryResource lists them, with the reason)", g.where, a)
				}
			}
			for why := range reasons {
				t.Logf("%s: %v on \"*\", the documented exception: %s", g.where, g.actions, why)
			}
		}
	}
	for _, n := range names {
		t.Errorf("%s has Policies that no test checks; add it to functions", n)
	}
}

// postsWithoutIdempotency are the POST routes behind the Gate that keep no
// Idempotency-Key, and why.
var postsWithoutIdempotency = map[string]string{
	"POST /api/account/keys":                  "its answer carries the new key, which the service never stores (httpapi.KeyCreateRoute)",
	"POST /api/account/webhook-secret/rotate": "its answer carries the new signing secret, which must not be kept in the idempotency table (httpapi.WebhookSecretRotateRoute)",
}

// TestIdempotencyKeysOnEveryGuardedPostAndNoGet: the Gate honours
// Idempotency-Key on every POST route it guards but postsWithoutIdempotency
// and on no GET, so usesOf (and with it the policies) must give exactly
// those functions the idempotency table.
func TestIdempotencyKeysOnEveryGuardedPostAndNoGet(t *testing.T) {
	for key := range postsWithoutIdempotency {
		if !slices.ContainsFunc(routes, func(r struct{ Method, Path, Function string }) bool { return r.Method+" "+r.Path == key }) {
			t.Errorf("postsWithoutIdempotency names %s, which is not a route of routes.Table", key)
		}
	}
	for _, rt := range routes {
		key := rt.Method + " " + rt.Path
		has := slices.ContainsFunc(allUses(t)[rt.Function], func(u use) bool { return base(u.target) == "table:IdempotencyTable" })
		_, exempt := postsWithoutIdempotency[key]
		switch want := rt.Method == "POST" && !slices.Contains(publicRoutes, key) && !exempt; {
		case want && !has:
			t.Errorf("%s (%s): a POST behind the Gate keeps Idempotency-Keys; its code does not call the idempotency table (storewiring.PostGate)", rt.Function, key)
		case !want && has:
			t.Errorf("%s (%s): a GET, a public route or one of postsWithoutIdempotency never reaches Gate.Idempotency, but its code calls the idempotency table", rt.Function, key)
		}
	}
}

// managedGrants is what the AWS managed policies SAM may attach allow on
// every resource ("*"), as AWS publishes them.
var managedGrants = map[string][]string{
	"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"},
	"arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
		"xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries"},
	"arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole": {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
		"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"},
}

// TestNoRoleReceivesDeletesOrOwnsLogsEverywhere reads the roles as sam
// deploy creates them (the expanded template): no role may receive or
// delete the messages of every queue, nor hold logs:* (or *) on every
// resource; each queue is polled by a role allowed on that queue.
func TestNoRoleReceivesDeletesOrOwnsLogsEverywhere(t *testing.T) {
	resources, _ := expanded(t)["Resources"].(map[string]any)
	forbidden := []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:DeleteMessageBatch", "logs:DeleteLogGroup", "logs:PutRetentionPolicy"}
	onQueue := map[string]map[string]bool{} // role -> "action queue" allowed
	for _, name := range sortedKeys(resources) {
		r, _ := resources[name].(map[string]any)
		if r["Type"] != "AWS::IAM::Role" {
			continue
		}
		props, _ := r["Properties"].(map[string]any)
		everywhere := map[string]string{} // action -> where
		managed, _ := props["ManagedPolicyArns"].([]any)
		for _, m := range managed {
			arn := show(m)
			s, _ := m.(string)
			grants, known := managedGrants[s]
			if !known {
				t.Errorf("%s: managed policy %s, whose grants this test does not know", name, arn)
			}
			for _, a := range grants {
				everywhere[a] = "managed policy " + s
			}
		}
		onQueue[name] = map[string]bool{}
		policies, _ := props["Policies"].([]any)
		for _, p := range policies {
			pm, _ := p.(map[string]any)
			doc, _ := pm["PolicyDocument"].(map[string]any)
			stmts, _ := doc["Statement"].([]any)
			for _, s := range stmts {
				sm, _ := s.(map[string]any)
				if sm["Effect"] != "Allow" {
					continue
				}
				actions, _ := stringList(sm["Action"])
				res, isList := sm["Resource"].([]any)
				if !isList {
					res = []any{sm["Resource"]}
				}
				for _, rv := range res {
					for _, a := range actions {
						if rv == "*" {
							everywhere[a] = "policy " + show(pm["PolicyName"])
							continue
						}
						// SQSPollerPolicy: arn:...:sqs:...:${queueName}, the queue's name a GetAtt.
						_, vars, _ := sub(rv)
						if q, attr, ok := getAtt(vars["queueName"]); ok && attr == "QueueName" {
							onQueue[name][strings.ToLower(a)+" "+q] = true
						}
					}
				}
			}
		}
		for _, a := range sortedKeys(everywhere) {
			onQueue[name][strings.ToLower(a)+" *"] = true
			broad := a == "*" || strings.EqualFold(a, "logs:*") || strings.EqualFold(a, "sqs:*")
			for _, f := range forbidden {
				broad = broad || glob(a, f, true)
			}
			if broad {
				t.Errorf("%s: %s on every resource (\"*\"), from %s; scope it to the function's own queue or log group", name, a, everywhere[a])
			}
		}
	}
	// Each mapping's function may poll exactly its queue.
	for _, name := range sortedKeys(resources) {
		r, _ := resources[name].(map[string]any)
		if r["Type"] != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		props, _ := r["Properties"].(map[string]any)
		queue, _, _ := getAtt(props["EventSourceArn"])
		fn, _ := ref(props["FunctionName"])
		f, _ := resources[fn].(map[string]any)
		fp, _ := f["Properties"].(map[string]any)
		role, _, _ := getAtt(fp["Role"])
		for _, a := range sqsPolling {
			if !onQueue[role][strings.ToLower(a)+" "+queue] && !onQueue[role][strings.ToLower(a)+" *"] {
				t.Errorf("%s: %s's role %s is not allowed %s on %s: Lambda refuses the mapping", name, fn, role, a, queue)
			}
		}
	}
}

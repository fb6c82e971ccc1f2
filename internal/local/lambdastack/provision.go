package lambdastack

import (
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// region and accountID are the stack's: moto's default account.
const (
	region    = "us-east-1"
	accountID = "123456789012"
)

// adminUser is the identity of the set-up and of the operator's own
// calls (the dev account, reading the outputs), allowed everything.
const adminUser = "mediagen-local-admin"

// creds are one identity's keys.
type creds struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

func (c creds) provider() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
}

// awsConfig is an SDK configuration for moto with these credentials.
func (s *Stack) awsConfig(c creds) aws.Config {
	return aws.Config{Region: region, Credentials: c.provider(), BaseEndpoint: aws.String(s.Moto.Endpoint),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired}
}

// resourcesOfType are the expanded template's resources of a type, sorted
// by logical id.
func (s *Stack) resourcesOfType(typ string) []string {
	var out []string
	for name, r := range s.doc["Resources"].(map[string]any) {
		if m, _ := r.(map[string]any); m["Type"] == typ {
			if cond, _ := m["Condition"].(string); cond != "" {
				if ok, err := s.res.tmpl.Condition(cond, s.res.params); err != nil || !ok {
					continue
				}
			}
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// properties are a resource's Properties, resolved.
func (s *Stack) properties(logical string) (map[string]any, error) {
	r, _ := s.doc["Resources"].(map[string]any)[logical].(map[string]any)
	v, err := s.res.resolve(r["Properties"])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", logical, err)
	}
	props, _ := v.(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	return props, nil
}

// rawProperties are a resource's Properties as the expansion wrote them.
func (s *Stack) rawProperties(logical string) map[string]any {
	r, _ := s.doc["Resources"].(map[string]any)[logical].(map[string]any)
	props, _ := r["Properties"].(map[string]any)
	return props
}

// provision makes in moto every table, queue, bucket, secret and
// distribution of the template, and each function's role with the
// template's policies.
func (s *Stack) provision(ctx context.Context) error {
	// The admin first, so that the rest is signed as a deployer's calls are.
	admin, err := s.createAdmin(ctx)
	if err != nil {
		return err
	}
	s.admin = admin
	cfg := s.awsConfig(admin)
	for _, step := range []func(context.Context, aws.Config) error{s.createTables, s.createQueues, s.createBuckets, s.createSecrets, s.createDistributions} {
		if err := step(ctx, cfg); err != nil {
			return err
		}
	}
	s.nameOthers()
	return s.createRoles(ctx, cfg)
}

func (s *Stack) createTables(ctx context.Context, cfg aws.Config) error {
	client := dynamodb.NewFromConfig(cfg)
	for _, logical := range s.resourcesOfType("AWS::DynamoDB::Table") {
		props, err := s.properties(logical)
		if err != nil {
			return err
		}
		// CloudFormation's property names are the API's: the table's keys,
		// attributes, indexes and billing mode unmarshal as they are.
		var in dynamodb.CreateTableInput
		sub := map[string]any{}
		for _, k := range []string{"TableName", "AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes", "LocalSecondaryIndexes", "BillingMode", "ProvisionedThroughput"} {
			if v, ok := props[k]; ok {
				sub[k] = v
			}
		}
		if sub["TableName"] == nil {
			sub["TableName"] = physicalName(s.cfg.StackName, logical, 255, false)
		}
		raw, _ := json.Marshal(sub)
		if err := json.Unmarshal(raw, &in); err != nil {
			return fmt.Errorf("%s: %w", logical, err)
		}
		if _, err := client.CreateTable(ctx, &in); err != nil {
			return fmt.Errorf("create table %s (%s): %w", aws.ToString(in.TableName), logical, err)
		}
		if ttl, ok := props["TimeToLiveSpecification"].(map[string]any); ok && ttl["Enabled"] == true {
			if _, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: in.TableName,
				TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(fmt.Sprint(ttl["AttributeName"])), Enabled: aws.Bool(true)}}); err != nil {
				return fmt.Errorf("TTL of table %s: %w", aws.ToString(in.TableName), err)
			}
		}
		name := aws.ToString(in.TableName)
		s.res.created[logical] = physical{ref: name, attrs: map[string]string{
			"Arn": fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", region, accountID, name)}}
		s.made = append(s.made, "table "+name)
	}
	return nil
}

// queueAttributes are the CloudFormation properties that are SQS queue
// attributes of the same name.
var queueAttributes = []string{"DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds", "VisibilityTimeout"}

func (s *Stack) createQueues(ctx context.Context, cfg aws.Config) error {
	client := sqs.NewFromConfig(cfg)
	queues := s.resourcesOfType("AWS::SQS::Queue")
	// Every queue first, then the redrive policies, which name other
	// queues' ARNs.
	for _, logical := range queues {
		props := s.rawProperties(logical)
		attrs := map[string]string{}
		for _, k := range queueAttributes {
			if v, ok := props[k]; ok {
				attrs[k] = scalar(v)
			}
		}
		name := physicalName(s.cfg.StackName, logical, 80, false)
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return fmt.Errorf("create queue %s (%s): %w", name, logical, err)
		}
		u := aws.ToString(out.QueueUrl)
		s.res.created[logical] = physical{ref: u, attrs: map[string]string{
			"Arn": fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, accountID, name), "QueueName": name, "QueueUrl": u}}
		s.made = append(s.made, "queue "+name)
	}
	for _, logical := range queues {
		props, err := s.properties(logical)
		if err != nil {
			return err
		}
		if rp, ok := props["RedrivePolicy"]; ok {
			raw, _ := json.Marshal(rp)
			if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(s.res.created[logical].ref),
				Attributes: map[string]string{string(sqstypes.QueueAttributeNameRedrivePolicy): string(raw)}}); err != nil {
				return fmt.Errorf("redrive policy of %s: %w", logical, err)
			}
		}
	}
	return nil
}

func (s *Stack) createBuckets(ctx context.Context, cfg aws.Config) error {
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	for _, logical := range s.resourcesOfType("AWS::S3::Bucket") {
		props, err := s.properties(logical)
		if err != nil {
			return err
		}
		name, _ := props["BucketName"].(string)
		if name == "" {
			name = physicalName(s.cfg.StackName, logical, 63, true)
		}
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			return fmt.Errorf("create bucket %s (%s): %w", name, logical, err)
		}
		rule, err := putBucketCORS(ctx, client, name, props["CorsConfiguration"])
		if err != nil {
			return fmt.Errorf("bucket %s (%s): %w", name, logical, err)
		}
		if rule != nil {
			if s.cors == nil {
				s.cors = map[string]*objectstore.CORSRule{}
			}
			s.cors[name] = rule
		}
		s.res.created[logical] = physical{ref: name, attrs: map[string]string{
			"Arn": "arn:aws:s3:::" + name, "DomainName": name + ".s3.amazonaws.com",
			"RegionalDomainName": name + ".s3." + region + ".amazonaws.com"}}
		s.made = append(s.made, "bucket "+name)
	}
	return nil
}

// putBucketCORS gives a bucket the template's CorsConfiguration, as
// CloudFormation does, and answers its first rule (nil: none). moto keeps
// it, but answers no preflight while it checks IAM (the request is
// unsigned): the stack answers them with the rule (presigned.go).
func putBucketCORS(ctx context.Context, client *s3.Client, name string, raw any) (*objectstore.CORSRule, error) {
	cfg, _ := raw.(map[string]any)
	rules, _ := cfg["CorsRules"].([]any)
	if len(rules) == 0 {
		return nil, nil
	}
	strs := func(v any) []string {
		var out []string
		list, _ := v.([]any)
		for _, x := range list {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	var out []s3types.CORSRule
	var first *objectstore.CORSRule
	for _, r := range rules {
		m, _ := r.(map[string]any)
		rule := s3types.CORSRule{AllowedOrigins: strs(m["AllowedOrigins"]), AllowedMethods: strs(m["AllowedMethods"]),
			AllowedHeaders: strs(m["AllowedHeaders"]), ExposeHeaders: strs(m["ExposedHeaders"])}
		age := 0
		switch a := m["MaxAge"].(type) {
		case int:
			age = a
		case float64:
			age = int(a)
		}
		if age > 0 {
			rule.MaxAgeSeconds = aws.Int32(int32(age))
		}
		out = append(out, rule)
		if first == nil {
			first = &objectstore.CORSRule{AllowedOrigins: rule.AllowedOrigins, AllowedMethods: rule.AllowedMethods,
				AllowedHeaders: rule.AllowedHeaders, MaxAgeSeconds: age}
		}
	}
	_, err := client.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String(name), CORSConfiguration: &s3types.CORSConfiguration{CORSRules: out}})
	if err != nil {
		return nil, fmt.Errorf("put its CORS configuration: %w", err)
	}
	return first, nil
}

func (s *Stack) createSecrets(ctx context.Context, cfg aws.Config) error {
	client := secretsmanager.NewFromConfig(cfg)
	for _, logical := range s.resourcesOfType("AWS::SecretsManager::Secret") {
		props, err := s.properties(logical)
		if err != nil {
			return err
		}
		name, _ := props["Name"].(string)
		if name == "" {
			name = physicalName(s.cfg.StackName, logical, 64, false)
		}
		value, _ := props["SecretString"].(string)
		if v, ok := s.cfg.Secrets[logical]; ok {
			// What the operator puts there after deploying
			// (put-secret-value), here at once.
			value = v
		}
		out, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
		if err != nil {
			return fmt.Errorf("create secret %s (%s): %w", name, logical, err)
		}
		s.res.created[logical] = physical{ref: aws.ToString(out.ARN), attrs: map[string]string{"Id": aws.ToString(out.ARN)}}
		s.made = append(s.made, "secret "+name)
	}
	return nil
}

// nameOthers gives the resources that are not made in moto their names
// and ARNs, so that the functions' environment and policies resolve: the
// functions (run here), the roles (made next), the state machine and the
// HTTP API.
func (s *Stack) nameOthers() {
	for _, logical := range s.resourcesOfType("AWS::Lambda::Function") {
		name := physicalName(s.cfg.StackName, logical, 64, false)
		s.res.created[logical] = physical{ref: name, attrs: map[string]string{
			"Arn": fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", region, accountID, name)}}
	}
	for _, logical := range s.resourcesOfType("AWS::IAM::Role") {
		name := physicalName(s.cfg.StackName, logical, 64, false)
		s.res.created[logical] = physical{ref: name, attrs: map[string]string{
			"Arn": fmt.Sprintf("arn:aws:iam::%s:role/%s", accountID, name), "RoleId": "AROA" + logical}}
	}
	for _, logical := range s.resourcesOfType("AWS::StepFunctions::StateMachine") {
		name := physicalName(s.cfg.StackName, logical, 80, false)
		arn := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", region, accountID, name)
		s.res.created[logical] = physical{ref: arn, attrs: map[string]string{"Arn": arn, "Name": name}}
	}
	for _, logical := range s.resourcesOfType("AWS::ApiGatewayV2::Api") {
		s.res.created[logical] = physical{ref: "local", attrs: map[string]string{"ApiEndpoint": s.BaseURL}}
	}
}

// createDistributions makes each CloudFront distribution of the template in
// moto, so that the functions' invalidations (cloudfront:CreateInvalidation,
// under their roles) reach a distribution that exists and are kept there
// for the tests to read (ListInvalidations as the admin). Its DomainName
// attribute is the media stand-in's (Config.MediaHost), which serves the
// files. Only the template's origin and what moto requires are sent: the
// invalidations depend on nothing else.
func (s *Stack) createDistributions(ctx context.Context, cfg aws.Config) error {
	client := cloudfront.NewFromConfig(cfg)
	for _, logical := range s.resourcesOfType("AWS::CloudFront::Distribution") {
		// The template's first origin (the output bucket, made before).
		config, _ := s.rawProperties(logical)["DistributionConfig"].(map[string]any)
		origins, _ := config["Origins"].([]any)
		if len(origins) == 0 {
			return fmt.Errorf("distribution %s: no origin", logical)
		}
		first, _ := origins[0].(map[string]any)
		originID, _ := first["Id"].(string)
		domain, err := s.res.resolveString(first["DomainName"])
		if err != nil {
			return fmt.Errorf("distribution %s: origin %s: %w", logical, originID, err)
		}
		out, err := client.CreateDistribution(ctx, &cloudfront.CreateDistributionInput{DistributionConfig: &cftypes.DistributionConfig{
			CallerReference: aws.String(s.cfg.StackName + "-" + logical),
			Comment:         aws.String(s.cfg.StackName + " " + logical),
			Enabled:         aws.Bool(true),
			Origins: &cftypes.Origins{Quantity: aws.Int32(1), Items: []cftypes.Origin{{Id: aws.String(originID),
				DomainName: aws.String(domain), S3OriginConfig: &cftypes.S3OriginConfig{OriginAccessIdentity: aws.String("")}}}},
			DefaultCacheBehavior: &cftypes.DefaultCacheBehavior{TargetOriginId: aws.String(originID), ViewerProtocolPolicy: cftypes.ViewerProtocolPolicyRedirectToHttps,
				CachePolicyId: aws.String("658327ea-f89d-4fab-a63d-7e88639e58f6")},
		}})
		if err != nil {
			return fmt.Errorf("create distribution %s: %w", logical, err)
		}
		s.res.created[logical] = physical{ref: aws.ToString(out.Distribution.Id), attrs: map[string]string{"DomainName": s.cfg.MediaHost}}
		s.made = append(s.made, "distribution "+aws.ToString(out.Distribution.Id))
	}
	return nil
}

// createRoles makes each function's role with the policies SAM attached
// to it, trusted by the admin (Lambda's stand-in), and assumes it for the
// function's credentials.
func (s *Stack) createRoles(ctx context.Context, cfg aws.Config) error {
	stsClient := sts.NewFromConfig(cfg)
	for _, fn := range s.resourcesOfType("AWS::Lambda::Function") {
		roleRef, _ := s.rawProperties(fn)["Role"].(map[string]any)
		att, _ := roleRef["Fn::GetAtt"].([]any)
		if len(att) != 2 {
			return fmt.Errorf("%s: Role is %v, want the role SAM makes (Fn::GetAtt <role>.Arn)", fn, s.rawProperties(fn)["Role"])
		}
		roleLogical := fmt.Sprint(att[0])
		role := s.res.created[roleLogical]
		roleProps, err := s.properties(roleLogical)
		if err != nil {
			return err
		}
		trust, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
			"Effect": "Allow", "Action": "sts:AssumeRole",
			"Principal": map[string]any{"AWS": fmt.Sprintf("arn:aws:iam::%s:user/%s", accountID, adminUser)}}}})
		if _, err := s.iam(ctx, s.admin, "CreateRole", url.Values{"RoleName": {role.ref}, "AssumeRolePolicyDocument": {string(trust)}}); err != nil {
			return fmt.Errorf("role of %s: %w", fn, err)
		}
		policies, _ := roleProps["Policies"].([]any)
		for _, p := range policies {
			pm, _ := p.(map[string]any)
			doc := motoPolicy(pm["PolicyDocument"])
			raw, _ := json.Marshal(doc)
			if _, err := s.iam(ctx, s.admin, "PutRolePolicy", url.Values{"RoleName": {role.ref},
				"PolicyName": {fmt.Sprint(pm["PolicyName"])}, "PolicyDocument": {string(raw)}}); err != nil {
				return fmt.Errorf("policy %v of %s: %w", pm["PolicyName"], fn, err)
			}
		}
		managed, _ := roleProps["ManagedPolicyArns"].([]any)
		for _, m := range managed {
			if _, err := s.iam(ctx, s.admin, "AttachRolePolicy", url.Values{"RoleName": {role.ref}, "PolicyArn": {fmt.Sprint(m)}}); err != nil {
				return fmt.Errorf("managed policy %v of %s: %w", m, fn, err)
			}
		}
		out, err := stsClient.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(role.attrs["Arn"]),
			RoleSessionName: aws.String(sessionName(s.res.created[fn].ref)), DurationSeconds: aws.Int32(43200)})
		if err != nil {
			return fmt.Errorf("assume the role of %s: %w", fn, err)
		}
		c := creds{aws.ToString(out.Credentials.AccessKeyId), aws.ToString(out.Credentials.SecretAccessKey), aws.ToString(out.Credentials.SessionToken)}
		s.Moto.nameKey(c.AccessKeyID, fn)
		s.roles[fn] = roleInfo{name: role.ref, creds: c}
	}
	return nil
}

// sessionName is the role session's name Lambda uses: the function's name
// (at most 64 characters).
func sessionName(function string) string {
	if len(function) > 64 {
		return function[:64]
	}
	return function
}

// motoChecksResources are the services whose requests moto authorizes
// against the resource's ARN. The others it authorizes against "*": a
// statement naming a table or a secret never matches there, so for them
// the policy keeps its actions and allows them on "*" (moto checks
// actions only). Conditions are dropped: moto has no request context to
// check them against.
var motoChecksResources = map[string]bool{"sqs": true, "s3": true}

// motoPolicy is a policy document as moto can check it (motoChecksResources).
func motoPolicy(doc any) any {
	d, _ := doc.(map[string]any)
	stmts, _ := d["Statement"].([]any)
	if m, ok := d["Statement"].(map[string]any); ok {
		stmts = []any{m}
	}
	out := make([]any, 0, len(stmts))
	for _, st := range stmts {
		sm, _ := st.(map[string]any)
		c := map[string]any{}
		for k, v := range sm {
			if k != "Condition" {
				c[k] = v
			}
		}
		actions := actionList(sm["Action"])
		// moto authorizes a transaction as an action of its own; AWS
		// authorizes each of its items as the item's action (there is no
		// TransactWriteItems permission). A statement allowing an item's
		// action allows the transaction here.
		for _, a := range actions {
			switch strings.ToLower(a) {
			case "dynamodb:putitem", "dynamodb:updateitem", "dynamodb:deleteitem", "dynamodb:conditioncheckitem":
				actions = appendNew(actions, "dynamodb:TransactWriteItems")
			case "dynamodb:getitem":
				actions = appendNew(actions, "dynamodb:TransactGetItems")
			}
		}
		c["Action"] = actions
		keep := true
		for _, a := range actions {
			svc, _, _ := strings.Cut(a, ":")
			if !motoChecksResources[strings.ToLower(svc)] {
				keep = false
			}
		}
		if !keep {
			c["Resource"] = "*"
		}
		out = append(out, c)
	}
	return map[string]any{"Version": "2012-10-17", "Statement": out}
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

func actionList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// createAdmin makes the admin user with an allow-all policy and its keys.
func (s *Stack) createAdmin(ctx context.Context) (creds, error) {
	anon := creds{AccessKeyID: "AKIASETUP", SecretAccessKey: "setup"}
	if _, err := s.iam(ctx, anon, "CreateUser", url.Values{"UserName": {adminUser}}); err != nil {
		return creds{}, err
	}
	all, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{"Effect": "Allow", "Action": "*", "Resource": "*"}}})
	if _, err := s.iam(ctx, anon, "PutUserPolicy", url.Values{"UserName": {adminUser}, "PolicyName": {"everything"}, "PolicyDocument": {string(all)}}); err != nil {
		return creds{}, err
	}
	body, err := s.iam(ctx, anon, "CreateAccessKey", url.Values{"UserName": {adminUser}})
	if err != nil {
		return creds{}, err
	}
	var out struct {
		Key struct {
			AccessKeyID     string `xml:"AccessKeyId"`
			SecretAccessKey string `xml:"SecretAccessKey"`
		} `xml:"CreateAccessKeyResult>AccessKey"`
	}
	if err := xml.Unmarshal(body, &out); err != nil || out.Key.AccessKeyID == "" {
		return creds{}, fmt.Errorf("CreateAccessKey answered %s: %v", body, err)
	}
	c := creds{AccessKeyID: out.Key.AccessKeyID, SecretAccessKey: out.Key.SecretAccessKey}
	s.Moto.nameKey(c.AccessKeyID, "admin")
	return c, nil
}

// iam calls one action of IAM's query API on moto, signed with c (the
// module has no IAM client, and these few calls need none).
func (s *Stack) iam(ctx context.Context, c creds, action string, params url.Values) ([]byte, error) {
	params.Set("Action", action)
	params.Set("Version", "2010-05-08")
	body := params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Moto.Endpoint+"/", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken},
		req, hex.EncodeToString(sum[:]), "iam", region, time.Now()); err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("IAM %s: %w", action, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("IAM %s: HTTP %d %s", action, resp.StatusCode, out)
	}
	return out, nil
}
